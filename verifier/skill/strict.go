package skill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// encoding/json (v1) matches member names without regard to case and lets a
// repeated member overwrite the first, silently; go-toml v2 also matches
// keys without regard to case. Either would let two readers of the same
// bytes see different values. The checks below run before those decoders
// and refuse what they would forgive.

// checkStrictJSON checks that data is exactly one JSON value shaped like t
// (a struct type whose fields carry json tags): every object member is a
// field of the matching struct, named with the exact case of its tag, and
// appears once; no null; numbers for integer fields are integers; nothing
// follows the value.
func checkStrictJSON(data []byte, t reflect.Type) error {
	if !utf8.Valid(data) {
		return errors.New("not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walkJSON(dec, t, "$"); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the value")
	}
	return nil
}

func walkJSON(dec *json.Decoder, t reflect.Type, at string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	switch t.Kind() {
	case reflect.Struct:
		if tok != json.Delim('{') {
			return fmt.Errorf("%s: want an object", at)
		}
		fields := jsonFields(t)
		seen := make(map[string]bool, len(fields))
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%s: %w", at, err)
			}
			key, _ := kt.(string)
			ft, ok := fields[key]
			switch {
			case !ok:
				return fmt.Errorf("%s: unknown member %q", at, key)
			case seen[key]:
				return fmt.Errorf("%s: repeated member %q", at, key)
			}
			seen[key] = true
			if err := walkJSON(dec, ft, at+"."+key); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case reflect.Slice:
		if tok != json.Delim('[') {
			return fmt.Errorf("%s: want an array", at)
		}
		for i := 0; dec.More(); i++ {
			if err := walkJSON(dec, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return fmt.Errorf("%s: want a string", at)
		}
	case reflect.Int64, reflect.Uint64:
		n, ok := tok.(json.Number)
		if !ok {
			return fmt.Errorf("%s: want an integer", at)
		}
		digits := strings.TrimPrefix(string(n), "-")
		if digits == "" || strings.Trim(digits, "0123456789") != "" || (t.Kind() == reflect.Uint64 && digits != string(n)) {
			return fmt.Errorf("%s: want a non-negative integer without fraction or exponent", at)
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return fmt.Errorf("%s: want true or false", at)
		}
	default:
		return fmt.Errorf("%s: no strict check for %s", at, t)
	}
	return nil
}

// jsonFields maps the json tag names of t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	m := make(map[string]reflect.Type, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = f.Type
		}
	}
	return m
}

// decodeStrictJSON runs checkStrictJSON, then decodes data into v (a
// pointer to a struct) with unknown members refused.
func decodeStrictJSON(data []byte, v any) error {
	if err := checkStrictJSON(data, reflect.TypeOf(v).Elem()); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// checkJSONText checks free-form JSON (a tool's input or output schema):
// UTF-8, one object, no repeated member in any object, nesting within
// maxDepth, nothing after it.
func checkJSONText(s string, maxDepth int) error {
	if !utf8.ValidString(s) {
		return errors.New("not UTF-8")
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	type level struct {
		object bool
		keys   map[string]bool
		key    bool // in an object: the next token is a member name
	}
	var stack []*level
	first := true
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			if first || len(stack) != 0 {
				return errors.New("unexpected end")
			}
			return nil
		}
		if err != nil {
			return err
		}
		if len(stack) == 0 && !first {
			return errors.New("data after the value")
		}
		if first && tok != json.Delim('{') {
			return errors.New("want an object")
		}
		first = false
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k, _ := tok.(string)
			if top.keys[k] {
				return fmt.Errorf("repeated member %q", k)
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		if top != nil && top.object {
			top.key = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{object: true, keys: map[string]bool{}, key: true})
		case json.Delim('['):
			stack = append(stack, &level{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > maxDepth {
			return fmt.Errorf("nested deeper than %d", maxDepth)
		}
	}
}

// checkTOMLKeys checks a generically decoded TOML document (maps, slices
// and values) against t, a struct type whose fields carry toml tags: every
// key must name a field with the exact case of its tag. Value types are left
// to the typed decoder that runs after.
func checkTOMLKeys(v any, t reflect.Type, at string) error {
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want a table", keyName(at))
		}
		fields := make(map[string]reflect.Type, t.NumField())
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if name := f.Tag.Get("toml"); name != "" {
				fields[name] = f.Type
			}
		}
		for k, sub := range m {
			ft, ok := fields[k]
			if !ok {
				return fmt.Errorf("unknown key %q", joinKey(at, k))
			}
			if err := checkTOMLKeys(sub, ft, joinKey(at, k)); err != nil {
				return err
			}
		}
	case reflect.Slice:
		rv := reflect.ValueOf(v)
		if !rv.IsValid() || rv.Kind() != reflect.Slice {
			return fmt.Errorf("%s: want an array", keyName(at))
		}
		for i := 0; i < rv.Len(); i++ {
			if err := checkTOMLKeys(rv.Index(i).Interface(), t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

func joinKey(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

func keyName(at string) string {
	if at == "" {
		return "document"
	}
	return fmt.Sprintf("%q", at)
}
