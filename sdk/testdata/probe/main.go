//go:build wasip1

// Command probe is a test skill, built by sdk's tests (never committed as a
// module), that calls every host function through the SDK and reports each
// error's class, so that the tests can drive the SDK's edge cases against a
// fake host.
package main

import (
	"errors"

	"github.com/stockade-dev/stockade/sdk"
)

// report is every probe's output: what came back, and the class of the
// error (ErrDenied → "denied", ...) as errors.Is sees it.
type report struct {
	Class  string            `json:"class"`
	Error  string            `json:"error,omitempty"`
	Value  string            `json:"value,omitempty"`
	Keys   []string          `json:"keys,omitempty"`
	Status int               `json:"status,omitempty"`
	Header map[string]string `json:"header,omitempty"`
}

func classify(err error) report {
	if err == nil {
		return report{Class: "ok"}
	}
	r := report{Class: "other", Error: err.Error()}
	for _, c := range []struct {
		err  error
		name string
	}{
		{sdk.ErrDenied, "denied"}, {sdk.ErrNotFound, "not_found"}, {sdk.ErrQuota, "quota"},
		{sdk.ErrInvalid, "invalid"}, {sdk.ErrUnavailable, "unavailable"},
	} {
		if errors.Is(err, c.err) {
			r.Class = c.name
		}
	}
	return r
}

type args struct {
	Name   string            `json:"name"`
	Key    string            `json:"key"`
	Value  string            `json:"value"`
	Level  int32             `json:"level"`
	Method string            `json:"method"`
	URL    string            `json:"url"`
	Header map[string]string `json:"header"`
	Body   string            `json:"body"`
}

func secret(ctx *sdk.Ctx, a args) (report, error) {
	v, err := ctx.Secret(a.Name)
	r := classify(err)
	if err == nil {
		r.Value = v
	}
	return r, nil
}

func kv(ctx *sdk.Ctx, a args) (report, error) {
	var r report
	switch a.Method {
	case "get":
		v, err := ctx.KV().Get(a.Key)
		r = classify(err)
		r.Value = string(v)
	case "put":
		r = classify(ctx.KV().Put(a.Key, []byte(a.Value)))
	case "delete":
		r = classify(ctx.KV().Delete(a.Key))
	case "list":
		k, err := ctx.KV().List(a.Key)
		r = classify(err)
		r.Keys = k
	default:
		return r, errors.New("no such method")
	}
	return r, nil
}

func fetch(ctx *sdk.Ctx, a args) (report, error) {
	resp, err := ctx.HTTP(a.Name).Do(&sdk.Request{Method: a.Method, URL: a.URL, Header: a.Header, Body: []byte(a.Body)})
	r := classify(err)
	if err == nil {
		r.Status, r.Header, r.Value = resp.Status, resp.Header, string(resp.Body)
	}
	return r, nil
}

func send(ctx *sdk.Ctx, a args) (report, error) {
	return classify(ctx.Channel(a.Name).Send(a.Value)), nil
}

func logLine(ctx *sdk.Ctx, a args) (report, error) {
	return classify(ctx.Log(sdk.Level(a.Level), a.Value)), nil
}

// kept is a Ctx kept past its call, which the next call of reuse uses.
var kept *sdk.Ctx

func keep(ctx *sdk.Ctx, a args) (report, error) {
	kept = ctx
	return classify(nil), nil
}

func reuse(ctx *sdk.Ctx, a args) (report, error) {
	_, err := kept.Secret(a.Name)
	return classify(err), nil
}

//go:wasmexport secret
func secretExport(p, n int32) int64 { return sdk.Handle(p, n, sdk.Tool(secret)) }

//go:wasmexport kv
func kvExport(p, n int32) int64 { return sdk.Handle(p, n, sdk.Tool(kv)) }

//go:wasmexport fetch
func fetchExport(p, n int32) int64 { return sdk.Handle(p, n, sdk.Tool(fetch)) }

//go:wasmexport send
func sendExport(p, n int32) int64 { return sdk.Handle(p, n, sdk.Tool(send)) }

//go:wasmexport log
func logExport(p, n int32) int64 { return sdk.Handle(p, n, sdk.Tool(logLine)) }

//go:wasmexport keep
func keepExport(p, n int32) int64 { return sdk.Handle(p, n, sdk.Tool(keep)) }

//go:wasmexport reuse
func reuseExport(p, n int32) int64 { return sdk.Handle(p, n, sdk.Tool(reuse)) }

//go:wasmexport raw
func rawExport(p, n int32) int64 {
	return sdk.Handle(p, n, func(ctx *sdk.Ctx, in []byte) []byte { return in })
}

//go:wasmexport panics
func panicsExport(p, n int32) int64 {
	return sdk.Handle(p, n, func(ctx *sdk.Ctx, in []byte) []byte { panic("probe") })
}

func main() {}
