package wasm

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// TestWASISignatures: the restricted module has every function of
// wazero's WASI preview 1, with the same signature, and nothing else.
func TestWASISignatures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, rt)
	defs := rt.Module(wasiModule).ExportedFunctionDefinitions()
	ours := map[string]hostFunc{}
	for _, f := range wasiFuncs {
		ours[f.name] = f
	}
	if len(defs) != len(ours) {
		t.Errorf("wazero has %d functions, we have %d", len(defs), len(ours))
	}
	for name, def := range defs {
		f, ok := ours[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if !slices.Equal(def.ParamTypes(), f.params) || !slices.Equal(def.ResultTypes(), f.results) {
			t.Errorf("%s: %v -> %v, wazero has %v -> %v", name, f.params, f.results, def.ParamTypes(), def.ResultTypes())
		}
	}
}

func TestWASI(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["wasi"]
	in := []byte("to stdout\n")
	before := time.Now()
	res, err := m.Run(t.Context(), "run", in, Limits{}, Grants{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Stdout) != string(in) || string(res.Stderr) != "err\n" {
		t.Errorf("stdout %q, stderr %q", res.Stdout, res.Stderr)
	}
	out := res.Output
	if len(out) != 0xc0 {
		t.Fatalf("output of %d bytes", len(out))
	}
	wantErrno := []uint32{
		0, 0, 0, 0, 0, 0, 0, // fd_write 1, 2; fd_read 0; random_get; clock realtime, monotonic; args_sizes_get
		errnoBadf, errnoBadf, errnoBadf, errnoBadf, // fd_prestat_get 3, path_open, sock_accept, fd_write 3
		0, 0, // fd_fdstat_get 1, poll_oneoff
		errnoInval,             // clock_time_get of the process CPU clock
		errnoFault, errnoFault, // fd_write and random_get out of bounds
	}
	for i, want := range wantErrno {
		if got := le32(out[4*i:]); got != want {
			t.Errorf("call %d: errno %d, want %d", i, got, want)
		}
	}
	if n := le32(out[0x40:]); n != 4 { // the last good fd_write wrote "err\n"
		t.Errorf("nwritten %d", n)
	}
	if n := le32(out[0x44:]); n != 0 {
		t.Errorf("read %d bytes of stdin", n)
	}
	if bytes.Equal(out[0x50:0x60], make([]byte, 16)) {
		t.Error("random_get wrote zeros")
	}
	if rt := time.Unix(0, int64(le64(out[0x60:]))); rt.Before(before.Add(-time.Second)) || rt.After(time.Now().Add(time.Second)) {
		t.Errorf("realtime clock %v", rt)
	}
	if le64(out[0x68:]) == 0 {
		t.Error("monotonic clock 0")
	}
	if argc, size := le32(out[0x70:]), le32(out[0x74:]); argc != 0 || size != 0 {
		t.Errorf("args: %d, %d bytes", argc, size)
	}
	if out[0x78] != filetypeCharacterDevice || le64(out[0x80:])&rightFDWrite == 0 {
		t.Errorf("fdstat of stdout %x", out[0x78:0x90])
	}
	if n, ud := le32(out[0x90:]), le64(out[0xa0:]); n != 1 || ud != 42 || out[0xaa] != eventClock {
		t.Errorf("poll_oneoff: %d events, userdata %d, type %d", n, ud, out[0xaa])
	}
	if res.HostCalls != 16 {
		t.Errorf("%d host calls, want 16", res.HostCalls)
	}
}

func TestWASIExit(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["wasi"]
	res, err := m.Run(t.Context(), "exit", []byte{0}, Limits{}, Grants{}, nil)
	if err != nil || len(res.Output) != 0 {
		t.Fatalf("exit(0): %v, output %q", err, res.Output)
	}
	_, err = m.Run(t.Context(), "exit", []byte{3}, Limits{}, Grants{}, nil)
	if e := wantError(t, err, ClassTrap, ""); e.Trap != TrapExit {
		t.Errorf("exit(3): trap %q", e.Trap)
	}
}

// TestDeadlineInHostCall: a guest blocked in a host call (poll_oneoff's
// sleep) stops at the deadline.
func TestDeadlineInHostCall(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, err := fixtures(t)["wasi"].Run(t.Context(), "sleep", nil, Limits{Timeout: 50 * time.Millisecond}, Grants{}, nil)
	wantError(t, err, ClassTimedOut, "")
	t.Logf("stopped after %v", time.Since(start))
	if time.Since(start) > 5*time.Second {
		t.Errorf("slept through the deadline")
	}
}
