//go:build !wasip1

package sdk

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// probeReport is sdk/testdata/probe's output.
type probeReport struct {
	Class  string            `json:"class"`
	Error  string            `json:"error"`
	Value  string            `json:"value"`
	Keys   []string          `json:"keys"`
	Status int               `json:"status"`
	Header map[string]string `json:"header"`
}

// TestProbe drives every host function through the SDK in a module,
// against the fake host, and checks what the skill sees: values, and the
// class of each error as errors.Is tells it.
func TestProbe(t *testing.T) {
	t.Parallel()
	mod := probeModule(t)
	okReply := func(httpWire) (string, int64) {
		return `{"status":201,"headers":{"content-type":"text/plain","x-two":["a","b"]},"body":"aGk="}`, 0
	}
	tests := []struct {
		name  string
		setup func(h *fakeHost)
		tool  string
		input string
		want  probeReport
	}{
		{"secret", func(h *fakeHost) { h.secrets["tok"] = "v" }, "secret", `{"name":"tok"}`,
			probeReport{Class: "ok", Value: "v"}},
		{"secret unset", func(h *fakeHost) { h.secrets["tok"] = "" }, "secret", `{"name":"tok"}`,
			probeReport{Class: "not_found", Error: `sdk: secret_get "tok": not found`}},
		{"secret denied", nil, "secret", `{"name":"tok"}`,
			probeReport{Class: "denied", Error: `sdk: handle "tok": capability denied`}},
		{"short result_read", func(h *fakeHost) { h.secrets["tok"] = "value"; h.shortRead = true }, "secret", `{"name":"tok"}`,
			probeReport{Class: "invalid", Error: `sdk: result_read "tok": invalid arguments`}},
		{"kv get missing", func(h *fakeHost) { h.storage = true }, "kv", `{"method":"get","key":"k"}`,
			probeReport{Class: "not_found", Error: `sdk: kv_get "k": not found`}},
		{"kv delete missing", func(h *fakeHost) { h.storage = true }, "kv", `{"method":"delete","key":"k"}`,
			probeReport{Class: "not_found", Error: `sdk: kv_delete "k": not found`}},
		{"kv put quota", func(h *fakeHost) { h.storage = true }, "kv", `{"method":"put","key":"k","value":"` + strings.Repeat("v", 100) + `"}`,
			probeReport{Class: "quota", Error: `sdk: kv_put "k": over a quota`}},
		{"kv get", func(h *fakeHost) { h.storage = true; h.kv["k"] = []byte("v\x00\xff") }, "kv", `{"method":"get","key":"k"}`,
			probeReport{Class: "ok", Value: "v\x00\ufffd"}},
		{"kv list", func(h *fakeHost) { h.storage = true; h.kv["a"] = nil; h.kv["b"] = nil }, "kv", `{"method":"list"}`,
			probeReport{Class: "ok", Keys: []string{"a", "b"}}},
		{"send", func(h *fakeHost) { h.channels["c"] = true }, "send", `{"name":"c","value":"m"}`,
			probeReport{Class: "ok"}},
		{"send denied", nil, "send", `{"name":"c","value":"m"}`,
			probeReport{Class: "denied", Error: `sdk: handle "c": capability denied`}},
		{"log", nil, "log", `{"level":2,"value":"line"}`, probeReport{Class: "ok"}},
		{"log bad level", nil, "log", `{"level":9,"value":"line"}`, probeReport{Class: "invalid", Error: "sdk: log: invalid arguments"}},
		{"fetch", func(h *fakeHost) { h.hosts["api.example.com"] = true; h.httpReply = okReply }, "fetch",
			`{"name":"api.example.com","method":"POST","url":"https://api.example.com/path","header":{"Accept":"a"},"body":"payload"}`,
			probeReport{Class: "ok", Status: 201, Value: "hi", Header: map[string]string{"content-type": "text/plain", "x-two": "a, b"}}},
		{"fetch denied", nil, "fetch", `{"name":"api.example.com","url":"https://api.example.com/"}`,
			probeReport{Class: "denied", Error: `sdk: handle "api.example.com": capability denied`}},
		{"fetch other host", func(h *fakeHost) { h.hosts["api.example.com"] = true }, "fetch", `{"name":"api.example.com","url":"https://127.0.0.1/"}`,
			probeReport{Class: "denied", Error: `sdk: http_request "api.example.com": capability denied`}},
		{"fetch unavailable", func(h *fakeHost) {
			h.hosts["h"] = true
			h.httpReply = func(httpWire) (string, int64) { return "", -5 }
		}, "fetch", `{"name":"h","url":"https://h/"}`,
			probeReport{Class: "unavailable", Error: `sdk: http_request "h": unavailable`}},
		{"fetch unknown code", func(h *fakeHost) {
			h.hosts["h"] = true
			h.httpReply = func(httpWire) (string, int64) { return "", -77 }
		}, "fetch", `{"name":"h","url":"https://h/"}`,
			probeReport{Class: "other", Error: `sdk: http_request "h": unknown host error code -77`}},
		{"fetch bad response", func(h *fakeHost) {
			h.hosts["h"] = true
			h.httpReply = func(httpWire) (string, int64) { return `{"status":200,"headers":{},"body":"not base64!"}`, 0 }
		}, "fetch", `{"name":"h","url":"https://h/"}`,
			probeReport{Class: "invalid", Error: `sdk: http_request "h": invalid arguments`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newFakeHost()
			if tt.setup != nil {
				tt.setup(h)
			}
			in := instantiate(t, "probe", mod, h)
			var got probeReport
			in.tool(tt.tool, json.RawMessage(tt.input), &got)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s(%s)\n got %+v\nwant %+v", tt.tool, tt.input, got, tt.want)
			}
		})
	}
}

// TestProbeWire checks the bytes the host receives: http_request's JSON
// (body base64, headers as arrays, method defaulted), log levels.
func TestProbeWire(t *testing.T) {
	t.Parallel()
	h := newFakeHost()
	h.hosts["api.example.com"] = true
	h.httpReply = func(httpWire) (string, int64) { return `{"status":200,"headers":null,"body":""}`, 0 }
	in := instantiate(t, "probe", probeModule(t), h)
	var r probeReport
	in.tool("fetch", json.RawMessage(`{"name":"api.example.com","url":"https://api.example.com/","body":"\u0000\u00ff"}`), &r)
	in.tool("fetch", json.RawMessage(`{"name":"api.example.com","method":"PUT","url":"https://api.example.com/","header":{"A":"1"}}`), &r)
	want := []httpWire{
		{Method: "GET", URL: "https://api.example.com/", Body: "AMO/"},
		{Method: "PUT", URL: "https://api.example.com/", Headers: map[string]string{"A": "1"}},
	}
	if !reflect.DeepEqual(h.https, want) {
		t.Errorf("requests\n got %+v\nwant %+v", h.https, want)
	}
	if r.Class != "ok" || r.Status != 200 || r.Header != nil {
		t.Errorf("report %+v", r)
	}
	in.tool("log", json.RawMessage(`{"level":3,"value":"error line"}`), &r)
	if !reflect.DeepEqual(h.logs, []logLine{{3, "error line"}}) {
		t.Errorf("logs = %+v", h.logs)
	}
}

// TestProbeHandles: handles are asked once per call and never reused in
// a later call; a Ctx kept past its call fails ErrInvalid without asking
// the host.
func TestProbeHandles(t *testing.T) {
	t.Parallel()
	h := newFakeHost()
	h.storage = true
	in := instantiate(t, "probe", probeModule(t), h)
	var r probeReport
	for range 3 {
		in.tool("kv", json.RawMessage(`{"method":"put","key":"k","value":"v"}`), &r)
	}
	if len(h.handles) != 3 {
		t.Errorf("%d handles issued for 3 calls, want 3 (one per call)", len(h.handles))
	}
	in.tool("keep", json.RawMessage(`{}`), &r)
	issued := len(h.handles)
	in.tool("reuse", json.RawMessage(`{"name":"x"}`), &r)
	if r.Class != "invalid" || len(h.handles) != issued {
		t.Errorf("a kept Ctx: %+v, %d handles asked", r, len(h.handles)-issued)
	}
}

// TestProbeExports: the allocator and the export protocol.
func TestProbeExports(t *testing.T) {
	t.Parallel()
	mod := probeModule(t)

	t.Run("raw echo", func(t *testing.T) {
		t.Parallel()
		in := instantiate(t, "probe", mod, newFakeHost())
		for _, s := range []string{"", "x", strings.Repeat("é", 100_000)} {
			got, err := in.call("raw", []byte(s))
			if err != nil || string(got) != s {
				t.Errorf("raw(%d bytes) = %d bytes, %v", len(s), len(got), err)
			}
		}
	})

	t.Run("two allocations", func(t *testing.T) {
		t.Parallel()
		in := instantiate(t, "probe", mod, newFakeHost())
		alloc := in.m.ExportedFunction("stockade_alloc")
		r1, _ := alloc.Call(in.ctx, 3)
		r2, _ := alloc.Call(in.ctx, 3)
		in.m.Memory().Write(uint32(r1[0]), []byte("one"))
		in.m.Memory().Write(uint32(r2[0]), []byte("two"))
		got, err := in.callAt("raw", uint32(r1[0]), 3)
		if err != nil || string(got) != "one" {
			t.Errorf("first buffer: %q, %v", got, err)
		}
		// The call dropped the other buffer: it is no longer an input.
		got, err = in.callAt("raw", uint32(r2[0]), 3)
		if err != nil || string(got) != `{"error":"sdk: input: invalid arguments"}` {
			t.Errorf("a buffer dropped by the previous call: %q, %v", got, err)
		}
	})

	bad := []struct {
		name string
		p, n uint32
	}{
		{"pointer not from stockade_alloc", 1024, 4},
		{"length past the buffer", 0, 1 << 20}, // p filled in below
		{"negative length", 0, 1 << 31},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := instantiate(t, "probe", mod, newFakeHost())
			res, _ := in.m.ExportedFunction("stockade_alloc").Call(in.ctx, 4)
			p := tt.p
			if p == 0 {
				p = uint32(res[0])
			}
			got, err := in.callAt("raw", p, tt.n)
			if err != nil || string(got) != `{"error":"sdk: input: invalid arguments"}` {
				t.Errorf("got %q, %v", got, err)
			}
		})
	}

	t.Run("alloc refuses", func(t *testing.T) {
		t.Parallel()
		in := instantiate(t, "probe", mod, newFakeHost())
		for _, n := range []uint64{1 << 31, 1<<30 + 1} {
			res, err := in.m.ExportedFunction("stockade_alloc").Call(in.ctx, n)
			if err != nil || res[0] != 0 {
				t.Errorf("stockade_alloc(%d) = %v, %v; want 0", n, res, err)
			}
		}
	})

	t.Run("other ABI version", func(t *testing.T) {
		t.Parallel()
		h := newFakeHost()
		h.version = 2
		in := instantiate(t, "probe", mod, h)
		got, err := in.call("raw", []byte("x"))
		if err != nil || string(got) != `{"error":"sdk: abi_version: the host speaks another ABI version than 1"}` {
			t.Errorf("got %q, %v", got, err)
		}
	})

	t.Run("panic traps", func(t *testing.T) {
		t.Parallel()
		in := instantiate(t, "probe", mod, newFakeHost())
		_, err := in.call("panics", []byte("{}"))
		if err == nil || !strings.Contains(err.Error(), "panic: probe") {
			t.Errorf("a panicking tool: %v, want a trap with the panic on stderr", err)
		}
	})
}
