//go:build !wasip1

package sdk

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// fakeHost is a stand-in for the Tier A host, written from the ABI comment
// in executor/wasm alone: the guest side is tested against the contract,
// not against the real runtime (whose tests run the same modules through
// the whole system). One fakeHost serves one instance.
type fakeHost struct {
	version  int32
	hosts    map[string]bool
	secrets  map[string]string // granted, with their values ("" = granted but unset)
	storage  bool
	channels map[string]bool

	// httpReply answers http_request: the JSON result, or a negative code.
	httpReply func(req httpWire) (string, int64)
	// shortRead makes result_read copy one byte less than asked.
	shortRead bool

	handles map[int64]grant
	next    int64
	last    []byte // the last result, for result_read
	kv      map[string][]byte
	logs    []logLine
	sent    []sentMessage
	https   []httpWire
}

type grant struct {
	kind int32
	name string
}

type logLine struct {
	Level int32
	Msg   string
}

type sentMessage struct{ Channel, Msg string }

// httpWire is http_request's request as the ABI draws it, decoded strictly.
type httpWire struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

func newFakeHost() *fakeHost {
	return &fakeHost{
		version: 1, handles: map[int64]grant{}, next: 0x5eed_0000, kv: map[string][]byte{},
		hosts: map[string]bool{}, secrets: map[string]string{}, channels: map[string]bool{},
	}
}

type fakeKey struct{}

func hostOf(ctx context.Context) *fakeHost { return ctx.Value(fakeKey{}).(*fakeHost) }

// errUnissued is the trap of a handle the host did not issue: the real
// host ends the call capability_denied.
var errUnissued = fmt.Errorf("capability_denied: a handle the host did not issue")

func (h *fakeHost) use(handle int64, kind int32) grant {
	g, ok := h.handles[handle]
	if !ok || g.kind != kind {
		panic(errUnissued)
	}
	return g
}

func (h *fakeHost) reply(b []byte) int64 {
	h.last = b
	return int64(len(b))
}

func read(m api.Module, ptr, n uint32) []byte {
	b, ok := m.Memory().Read(ptr, n)
	if !ok {
		panic(fmt.Errorf("out of bounds: %d+%d", ptr, n))
	}
	return bytes.Clone(b)
}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

// instantiateFakeHost adds the module "stockade" to r, as the ABI
// describes it.
func instantiateFakeHost(ctx context.Context, r wazero.Runtime) error {
	b := r.NewHostModuleBuilder("stockade")
	fn := func(name string, params, results []api.ValueType, f func(ctx context.Context, m api.Module, s []uint64)) {
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(f), params, results).Export(name)
	}
	fn("abi_version", nil, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
		s[0] = api.EncodeI32(hostOf(ctx).version)
	})
	fn("log", []api.ValueType{i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
		h := hostOf(ctx)
		if level := int32(s[0]); level < 0 || level > 3 {
			s[0] = api.EncodeI32(-4)
			return
		}
		h.logs = append(h.logs, logLine{int32(s[0]), string(read(m, uint32(s[1]), uint32(s[2])))})
		s[0] = 0
	})
	fn("handle", []api.ValueType{i32, i32, i32}, []api.ValueType{i64}, func(ctx context.Context, m api.Module, s []uint64) {
		h := hostOf(ctx)
		kind, name := int32(s[0]), string(read(m, uint32(s[1]), uint32(s[2])))
		var ok bool
		switch kind {
		case 1:
			ok = h.hosts[name]
		case 2:
			_, ok = h.secrets[name]
		case 3:
			ok = h.storage && name == ""
		case 4:
			ok = h.channels[name]
		}
		if !ok {
			s[0] = api.EncodeI64(-1)
			return
		}
		h.next += 7919
		h.handles[h.next] = grant{kind, name}
		s[0] = api.EncodeI64(h.next)
	})
	fn("http_request", []api.ValueType{i64, i32, i32}, []api.ValueType{i64}, func(ctx context.Context, m api.Module, s []uint64) {
		h := hostOf(ctx)
		g := h.use(int64(s[0]), 1)
		var req httpWire
		dec := json.NewDecoder(bytes.NewReader(read(m, uint32(s[1]), uint32(s[2]))))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			s[0] = api.EncodeI64(-4)
			return
		}
		if _, err := base64.StdEncoding.Strict().DecodeString(req.Body); err != nil {
			s[0] = api.EncodeI64(-4)
			return
		}
		h.https = append(h.https, req)
		if req.URL != "https://"+g.name+"/" && req.URL != "https://"+g.name+"/path" {
			s[0] = api.EncodeI64(-1)
			return
		}
		resp, code := h.httpReply(req)
		if code < 0 {
			s[0] = api.EncodeI64(code)
			return
		}
		s[0] = api.EncodeI64(h.reply([]byte(resp)))
	})
	fn("secret_get", []api.ValueType{i64}, []api.ValueType{i64}, func(ctx context.Context, m api.Module, s []uint64) {
		h := hostOf(ctx)
		g := h.use(int64(s[0]), 2)
		v := h.secrets[g.name]
		if v == "" {
			s[0] = api.EncodeI64(-2)
			return
		}
		s[0] = api.EncodeI64(h.reply([]byte(v)))
	})
	fn("kv_get", []api.ValueType{i64, i32, i32}, []api.ValueType{i64}, func(ctx context.Context, m api.Module, s []uint64) {
		h := hostOf(ctx)
		h.use(int64(s[0]), 3)
		v, ok := h.kv[string(read(m, uint32(s[1]), uint32(s[2])))]
		if !ok {
			s[0] = api.EncodeI64(-2)
			return
		}
		s[0] = api.EncodeI64(h.reply(v))
	})
	fn("kv_put", []api.ValueType{i64, i32, i32, i32, i32}, []api.ValueType{i64}, func(ctx context.Context, m api.Module, s []uint64) {
		h := hostOf(ctx)
		h.use(int64(s[0]), 3)
		key, val := string(read(m, uint32(s[1]), uint32(s[2]))), read(m, uint32(s[3]), uint32(s[4]))
		if len(val) > 64 {
			s[0] = api.EncodeI64(-3)
			return
		}
		h.kv[key] = val
		s[0] = 0
	})
	fn("kv_delete", []api.ValueType{i64, i32, i32}, []api.ValueType{i64}, func(ctx context.Context, m api.Module, s []uint64) {
		h := hostOf(ctx)
		h.use(int64(s[0]), 3)
		key := string(read(m, uint32(s[1]), uint32(s[2])))
		if _, ok := h.kv[key]; !ok {
			s[0] = api.EncodeI64(-2)
			return
		}
		delete(h.kv, key)
		s[0] = 0
	})
	fn("kv_list", []api.ValueType{i64, i32, i32}, []api.ValueType{i64}, func(ctx context.Context, m api.Module, s []uint64) {
		h := hostOf(ctx)
		h.use(int64(s[0]), 3)
		prefix := string(read(m, uint32(s[1]), uint32(s[2])))
		keys := []string{}
		for k := range h.kv {
			if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		b, _ := json.Marshal(keys)
		s[0] = api.EncodeI64(h.reply(b))
	})
	fn("channel_send", []api.ValueType{i64, i32, i32}, []api.ValueType{i64}, func(ctx context.Context, m api.Module, s []uint64) {
		h := hostOf(ctx)
		g := h.use(int64(s[0]), 4)
		h.sent = append(h.sent, sentMessage{g.name, string(read(m, uint32(s[1]), uint32(s[2])))})
		s[0] = 0
	})
	fn("result_read", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, m api.Module, s []uint64) {
		h := hostOf(ctx)
		n := min(int(uint32(s[1])), len(h.last))
		if h.shortRead && n > 0 {
			n--
		}
		if !m.Memory().Write(uint32(s[0]), h.last[:n]) {
			panic("result_read out of bounds")
		}
		s[0] = api.EncodeI32(int32(n))
	})
	_, err := b.Instantiate(ctx)
	return err
}

// A runner compiles modules once, in one runtime with WASI and the fake
// host, and instantiates them per test.
type runner struct {
	ctx context.Context
	r   wazero.Runtime
	mu  sync.Mutex
	mod map[string]wazero.CompiledModule
}

var sharedRunner = sync.OnceValues(func() (*runner, error) {
	ctx := context.Background()
	r := wazero.NewRuntime(ctx)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, r); err != nil {
		return nil, err
	}
	if err := instantiateFakeHost(ctx, r); err != nil {
		return nil, err
	}
	return &runner{ctx: ctx, r: r, mod: map[string]wazero.CompiledModule{}}, nil
})

// instance is one instantiated skill module with its fake host.
type instance struct {
	t      testing.TB
	ctx    context.Context
	m      api.Module
	host   *fakeHost
	stderr *bytes.Buffer
}

func instantiate(t testing.TB, name string, module []byte, h *fakeHost) *instance {
	t.Helper()
	run, err := sharedRunner()
	if err != nil {
		t.Fatal(err)
	}
	run.mu.Lock()
	cm, ok := run.mod[name]
	if !ok {
		if cm, err = run.r.CompileModule(run.ctx, module); err != nil {
			run.mu.Unlock()
			t.Fatalf("compile %s: %v", name, err)
		}
		run.mod[name] = cm
	}
	run.mu.Unlock()
	var stderr bytes.Buffer
	ctx := context.WithValue(run.ctx, fakeKey{}, h)
	m, err := run.r.InstantiateModule(ctx, cm, wazero.NewModuleConfig().WithName("").WithStartFunctions().WithStderr(&stderr))
	if err != nil {
		t.Fatalf("instantiate %s: %v", name, err)
	}
	t.Cleanup(func() { m.Close(run.ctx) })
	if _, err := m.ExportedFunction("_initialize").Call(ctx); err != nil {
		t.Fatalf("_initialize: %v\n%s", err, stderr.Bytes())
	}
	return &instance{t: t, ctx: ctx, m: m, host: h, stderr: &stderr}
}

// call runs a tool export the way the host does: stockade_alloc, write
// the input, call the export, read (out_ptr << 32) | out_len.
func (in *instance) call(export string, input []byte) ([]byte, error) {
	in.t.Helper()
	res, err := in.m.ExportedFunction("stockade_alloc").Call(in.ctx, uint64(len(input)))
	if err != nil {
		return nil, err
	}
	p := uint32(res[0])
	if p == 0 {
		in.t.Fatalf("stockade_alloc(%d) = 0", len(input))
	}
	if !in.m.Memory().Write(p, input) {
		in.t.Fatalf("stockade_alloc(%d) = %#x, out of bounds", len(input), p)
	}
	return in.callAt(export, p, uint32(len(input)))
}

func (in *instance) callAt(export string, p, n uint32) ([]byte, error) {
	in.t.Helper()
	f := in.m.ExportedFunction(export)
	if f == nil {
		in.t.Fatalf("no export %q", export)
	}
	res, err := f.Call(in.ctx, uint64(p), uint64(n))
	if err != nil {
		return nil, fmt.Errorf("%w (stderr: %q)", err, in.stderr.String())
	}
	out := res[0]
	return read(in.m, uint32(out>>32), uint32(out)), nil
}

// tool calls export with in encoded as JSON and decodes its output into
// out (also when the output is an {"error"}: check it).
func (in *instance) tool(export string, input any, out any) {
	in.t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		in.t.Fatal(err)
	}
	got, err := in.call(export, b)
	if err != nil {
		in.t.Fatalf("%s(%s): %v", export, b, err)
	}
	if err := json.Unmarshal(got, out); err != nil {
		in.t.Fatalf("%s(%s) = %s: %v", export, b, got, err)
	}
}
