package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
)

// A Handler runs one tool call: it gets the call's context and input (the
// JSON the host wrote) and returns the output (JSON). Tool makes one from a
// typed function; a skill that wants the raw bytes can write its own.
type Handler func(ctx *Ctx, input []byte) (output []byte)

// Tool makes a Handler of fn. The input is decoded into In with
// encoding/json, strictly: a member In does not have, or anything after
// the JSON value, is an error; an empty input decodes as null (In's zero
// value). fn's result is encoded with encoding/json.
//
// An error (from decoding, from fn, or from encoding the result) becomes
// the output {"error":"<message>"}: the message goes to the agent, so it
// must not carry a secret. A panic in fn is not recovered: the module
// traps and the call ends trap.
func Tool[In, Out any](fn func(ctx *Ctx, in In) (Out, error)) Handler {
	return func(ctx *Ctx, input []byte) []byte {
		var in In
		if len(input) > 0 {
			if err := decodeStrict(input, &in); err != nil {
				return ErrorOutput(errors.New("sdk: invalid input: " + err.Error()))
			}
		}
		out, err := fn(ctx, in)
		if err != nil {
			return ErrorOutput(err)
		}
		b, err := json.Marshal(out)
		if err != nil {
			return ErrorOutput(errors.New("sdk: encoding the output: " + err.Error()))
		}
		return b
	}
}

// ErrorOutput returns the output a tool gives for err: {"error":"<message>"}.
func ErrorOutput(err error) []byte {
	b, jerr := json.Marshal(struct {
		Error string `json:"error"`
	}{err.Error()})
	if jerr != nil { // cannot happen: a string always encodes
		return []byte(`{"error":"sdk: unencodable error"}`)
	}
	return b
}

// decodeStrict decodes one JSON value into v, refusing unknown members and
// trailing data.
func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if rest := data[dec.InputOffset():]; len(bytes.TrimLeft(rest, " \t\r\n")) > 0 {
		return errors.New("data after the JSON value")
	}
	return nil
}

// serve runs h on one input under a fresh context, which is closed when h
// returns: capabilities obtained during the call are not used after it.
func serve(h Handler, input []byte) []byte {
	ctx := &Ctx{}
	defer ctx.close()
	if h == nil {
		return ErrorOutput(errors.New("sdk: no handler"))
	}
	return h(ctx, input)
}
