//go:build !wasip1

package sdk

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

type greetIn struct {
	Name string `json:"name"`
	N    int    `json:"n,omitempty"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

func greetFn(ctx *Ctx, in greetIn) (greetOut, error) {
	if in.Name == "" {
		return greetOut{}, errors.New("name is empty")
	}
	return greetOut{"Hello, " + in.Name}, nil
}

// toolCases is the table of TestTool and the seeds of FuzzTool.
var toolCases = []struct {
	name, input, output string
}{
	{"ok", `{"name":"Ada"}`, `{"greeting":"Hello, Ada"}`},
	{"whitespace around", " \n{\"name\":\"Ada\"}\t\r\n", `{"greeting":"Hello, Ada"}`},
	{"tool error", `{"name":""}`, `{"error":"name is empty"}`},
	{"empty input is null", ``, `{"error":"name is empty"}`},
	{"null", `null`, `{"error":"name is empty"}`},
	{"unknown member", `{"name":"a","x":1}`, `{"error":"sdk: invalid input: json: unknown field \"x\""}`},
	{"trailing value", `{"name":"a"}{}`, `{"error":"sdk: invalid input: data after the JSON value"}`},
	{"trailing garbage", `{"name":"a"} x`, `{"error":"sdk: invalid input: data after the JSON value"}`},
	{"wrong type", `{"name":1}`, `{"error":"sdk: invalid input: json: cannot unmarshal number into Go struct field greetIn.name of type string"}`},
	{"truncated", `{"name":"a"`, `{"error":"sdk: invalid input: unexpected EOF"}`},
	{"not an object", `[]`, `{"error":"sdk: invalid input: json: cannot unmarshal array into Go value of type sdk.greetIn"}`},
	{"html escaped", `{"name":"<b>"}`, `{"greeting":"Hello, \u003cb\u003e"}`},
}

func TestTool(t *testing.T) {
	t.Parallel()
	h := Tool(greetFn)
	for _, tt := range toolCases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := serve(h, []byte(tt.input)); string(got) != tt.output {
				t.Errorf("output %s\nwant   %s", got, tt.output)
			}
		})
	}
}

// FuzzTool: whatever the input, a Tool's output is one JSON object with
// either the tool's members or exactly "error".
func FuzzTool(f *testing.F) {
	for _, tt := range toolCases {
		f.Add([]byte(tt.input))
	}
	h := Tool(greetFn)
	f.Fuzz(func(t *testing.T, input []byte) {
		out := serve(h, input)
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("output %q is not a JSON object: %v", out, err)
		}
		_, isErr := m["error"]
		_, isGreeting := m["greeting"]
		if len(m) != 1 || isErr == isGreeting {
			t.Fatalf("output %s", out)
		}
	})
}

func TestToolEncodeError(t *testing.T) {
	t.Parallel()
	h := Tool(func(*Ctx, struct{}) (func(), error) { return func() {}, nil })
	if got, want := string(serve(h, nil)), `{"error":"sdk: encoding the output: json: unsupported type: func()"}`; got != want {
		t.Errorf("%s, want %s", got, want)
	}
	if got := string(serve(nil, nil)); got != `{"error":"sdk: no handler"}` {
		t.Errorf("nil handler: %s", got)
	}
}

func TestErrorClasses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		code int64
		want error
		msg  string
	}{
		{codeDenied, ErrDenied, `sdk: kv_get "k": capability denied`},
		{codeNotFound, ErrNotFound, `sdk: kv_get "k": not found`},
		{codeQuota, ErrQuota, `sdk: kv_get "k": over a quota`},
		{codeInvalid, ErrInvalid, `sdk: kv_get "k": invalid arguments`},
		{codeUnavailable, ErrUnavailable, `sdk: kv_get "k": unavailable`},
		{codeNotInSkill, ErrNotInSkill, `sdk: kv_get "k": only in a skill (GOOS=wasip1 GOARCH=wasm)`},
		{-6, nil, `sdk: kv_get "k": unknown host error code -6`},
	} {
		_, err := result("kv_get", "k", tt.code)
		if err == nil || err.Error() != tt.msg {
			t.Errorf("code %d: %v, want %q", tt.code, err, tt.msg)
		}
		for _, class := range []error{ErrDenied, ErrNotFound, ErrQuota, ErrInvalid, ErrUnavailable, ErrNotInSkill} {
			if got := errors.Is(err, class); got != (class == tt.want) {
				t.Errorf("code %d: errors.Is(%v) = %v", tt.code, class, got)
			}
		}
	}
	if b, err := result("kv_get", "k", 0); err != nil || b == nil || len(b) != 0 {
		t.Errorf("an empty result: %q, %v", b, err)
	}
	if _, err := result("kv_get", "k", 1<<31); !errors.Is(err, ErrQuota) {
		t.Errorf("a result over 2 GiB: %v", err)
	}
}

// TestNotInSkill: on the developer's machine every host call fails
// ErrNotInSkill, and a closed Ctx fails ErrInvalid.
func TestNotInSkill(t *testing.T) {
	t.Parallel()
	ctx := &Ctx{}
	calls := map[string]func(*Ctx) error{
		"Secret": func(c *Ctx) error { _, err := c.Secret("s"); return err },
		"Get":    func(c *Ctx) error { _, err := c.KV().Get("k"); return err },
		"Put":    func(c *Ctx) error { return c.KV().Put("k", nil) },
		"Delete": func(c *Ctx) error { return c.KV().Delete("k") },
		"List":   func(c *Ctx) error { _, err := c.KV().List(""); return err },
		"Send":   func(c *Ctx) error { return c.Channel("c").Send("m") },
		"Log":    func(c *Ctx) error { return c.Log(LevelInfo, "m") },
		"Do": func(c *Ctx) error {
			_, err := c.HTTP("h").Do(&Request{URL: "https://h/"})
			return err
		},
	}
	for name, call := range calls {
		if err := call(ctx); !errors.Is(err, ErrNotInSkill) {
			t.Errorf("%s: %v, want ErrNotInSkill", name, err)
		}
	}
	ctx.close()
	for name, call := range calls {
		if err := call(ctx); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s on a closed Ctx: %v, want ErrInvalid", name, err)
		}
	}
	if _, err := (&Ctx{}).HTTP("h").Do(nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Do(nil): %v", err)
	}
}

func TestHTTPRequestWire(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		req  Request
		want string
	}{
		{Request{URL: "https://h/"}, `{"method":"GET","url":"https://h/"}`},
		{Request{Method: "POST", URL: "https://h/p", Header: map[string]string{"B": "2", "A": "1"}, Body: []byte{0, 0xff}},
			`{"method":"POST","url":"https://h/p","headers":{"A":"1","B":"2"},"body":"AP8="}`},
		{Request{Method: "PUT", URL: "https://h/", Header: map[string]string{}, Body: []byte{}}, `{"method":"PUT","url":"https://h/"}`},
	} {
		got, err := encodeHTTPRequest(&tt.req)
		if err != nil || string(got) != tt.want {
			t.Errorf("%+v: %s, %v\nwant %s", tt.req, got, err, tt.want)
		}
	}
}

// httpResponses is the table of TestHTTPResponseWire and the seeds of
// FuzzHTTPResponse.
var httpResponses = []struct {
	wire string
	want *Response // nil: refused
}{
	{`{"status":200,"headers":{"content-type":"text/plain"},"body":"aGk="}`,
		&Response{200, map[string]string{"content-type": "text/plain"}, []byte("hi")}},
	{`{"status":404,"headers":{},"body":""}`, &Response{404, map[string]string{}, []byte{}}},
	{`{"status":204}`, &Response{204, map[string]string{}, []byte{}}},
	{`{"status":200,"headers":{"set-cookie":["a=1","b=2"]},"body":""}`,
		&Response{200, map[string]string{"set-cookie": "a=1, b=2"}, []byte{}}},
	{`{"status":200,"headers":{"x":null},"body":""}`, nil},
	{`{"status":200,"headers":{"x":1},"body":""}`, nil},
	{`{"status":200,"headers":[],"body":""}`, nil},
	{`{"status":99,"headers":{},"body":""}`, nil},
	{`{"status":200,"headers":{},"body":"aGk"}`, nil},   // no padding
	{`{"status":200,"headers":{},"body":"aGl="}`, nil},  // stray bits
	{`{"status":200,"headers":{},"body":"a Gk="}`, nil}, // not base64
	{`{"status":"200"}`, nil},
	{`not json`, nil},
}

func TestHTTPResponseWire(t *testing.T) {
	t.Parallel()
	for _, tt := range httpResponses {
		got, err := decodeHTTPResponse([]byte(tt.wire))
		if tt.want == nil {
			if err == nil {
				t.Errorf("%s: accepted as %+v", tt.wire, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v, %v\nwant %+v", tt.wire, got, err, tt.want)
		}
	}
}

// FuzzHTTPResponse: the decoder never panics, and what it accepts has a
// status in range and a non-nil header map.
func FuzzHTTPResponse(f *testing.F) {
	for _, tt := range httpResponses {
		f.Add([]byte(tt.wire))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeHTTPResponse(b)
		if err != nil {
			return
		}
		if r.Status < 100 || r.Status > 999 || r.Header == nil || r.Body == nil {
			t.Fatalf("accepted %q as %+v", b, r)
		}
	})
}

func TestOpErrorNames(t *testing.T) {
	t.Parallel()
	// A name with control characters is quoted, so an error message cannot
	// forge a line.
	err := &opError{op: "kv_get", name: "a\nb\x1b", err: ErrNotFound}
	if msg := err.Error(); strings.ContainsAny(msg, "\n\x1b") || !utf8.ValidString(msg) {
		t.Errorf("%q", msg)
	}
}
