package wasm

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stockade-dev/stockade/wasm/meter"
)

// fixtureDir holds this package's .wat fixtures and the .wasm made from
// them (see TestFixturesUpToDate).
const fixtureDir = "../../testdata/wasm/tiera"

// hugeFuel never runs out in a test.
const hugeFuel = 1 << 50

func readFixture(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	return readFixture(t, filepath.Join(fixtureDir, name+".wasm"))
}

func newEngine(t testing.TB, cfg EngineConfig) *Engine {
	t.Helper()
	e, err := NewEngine(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(context.Background()) })
	return e
}

// compile instruments module with the default meter.Config and compiles it.
func compile(t testing.TB, e *Engine, module []byte) *Module {
	t.Helper()
	out, _, err := meter.Instrument(module, meter.Config{})
	if err != nil {
		t.Fatalf("instrument: %v", err)
	}
	m, err := e.Compile(context.Background(), out)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	t.Cleanup(func() { m.Close(context.Background()) })
	return m
}

// sharedEngine is one Engine with the fixtures compiled, for tests that
// only run calls.
var shared struct {
	once    sync.Once
	e       *Engine
	modules map[string]*Module
	err     error
}

func fixtures(t testing.TB) map[string]*Module {
	t.Helper()
	shared.once.Do(func() {
		ctx := context.Background()
		shared.e, shared.err = NewEngine(ctx, EngineConfig{MaxInstancesPerModule: 64})
		if shared.err != nil {
			return
		}
		shared.modules = map[string]*Module{}
		for _, name := range []string{"echo", "limits", "host", "wasi"} {
			b, err := os.ReadFile(filepath.Join(fixtureDir, name+".wasm"))
			if err != nil {
				shared.err = err
				return
			}
			out, _, err := meter.Instrument(b, meter.Config{})
			if err != nil {
				shared.err = err
				return
			}
			m, err := shared.e.Compile(ctx, out)
			if err != nil {
				shared.err = err
				return
			}
			shared.modules[name] = m
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.modules
}

// wantError asserts that err is an *Error of the class and resource and
// returns it.
func wantError(t testing.TB, err error, class Class, resource Resource) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want an *Error of class %s", err, err, class)
	}
	if e.Class != class || e.Resource != resource {
		t.Fatalf("error %v, want class %s resource %q (cause: %v)", e, class, resource, e.Err)
	}
	return e
}

func le32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }
func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// doInput builds the input of host.wat's "do" tool.
func doInput(kind, op int32, handle int64, name string, a, b []byte) []byte {
	in := binary.LittleEndian.AppendUint32(nil, uint32(kind))
	in = binary.LittleEndian.AppendUint32(in, uint32(op))
	in = binary.LittleEndian.AppendUint64(in, uint64(handle))
	in = binary.LittleEndian.AppendUint32(in, uint32(len(name)))
	in = binary.LittleEndian.AppendUint32(in, uint32(len(a)))
	in = append(in, name...)
	in = append(in, a...)
	return append(in, b...)
}

// Ops of host.wat's "do".
const (
	opNone = iota
	opHTTP
	opSecret
	opKVGet
	opKVPut
	opKVDelete
	opKVList
	opSend
)

// doOutput splits the output of "do": the handle, the op's result, and
// the result read back.
func doOutput(t testing.TB, out []byte) (h, r int64, result []byte) {
	t.Helper()
	if len(out) < 16 {
		t.Fatalf("output of %d bytes", len(out))
	}
	return int64(le64(out)), int64(le64(out[8:])), out[16:]
}

// fakeBroker records what it is asked and answers from its fields.
type fakeBroker struct {
	mu       sync.Mutex
	requests []brokerHTTP
	httpResp []byte
	httpErr  error
	secrets  map[string]string
	kv       map[string]string
	kvOps    []string
}

type brokerHTTP struct {
	host    string
	request string
}

var _ Broker = (*fakeBroker)(nil)

func (b *fakeBroker) HTTP(_ context.Context, host string, request []byte) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests = append(b.requests, brokerHTTP{host, string(request)})
	return b.httpResp, b.httpErr
}

func (b *fakeBroker) Secret(_ context.Context, name string) ([]byte, error) {
	v, ok := b.secrets[name]
	if !ok {
		return nil, ErrNotFound
	}
	return []byte(v), nil
}

func (b *fakeBroker) KV(_ context.Context, op string, key, value []byte) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.kvOps = append(b.kvOps, op+" "+string(key))
	if b.kv == nil {
		b.kv = map[string]string{}
	}
	switch op {
	case "get":
		v, ok := b.kv[string(key)]
		if !ok {
			return nil, ErrNotFound
		}
		return []byte(v), nil
	case "put":
		b.kv[string(key)] = string(value)
	case "delete":
		delete(b.kv, string(key))
	case "list":
		return []byte(`["a","b"]`), nil
	}
	return nil, nil
}
