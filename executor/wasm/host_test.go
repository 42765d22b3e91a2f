package wasm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestABIVersion(t *testing.T) {
	t.Parallel()
	res, err := fixtures(t)["host"].Run(t.Context(), "abi", nil, Limits{}, Grants{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := le32(res.Output); v != ABIVersion {
		t.Errorf("abi_version() = %d", v)
	}
	if res.HostCalls != 1 {
		t.Errorf("%d host calls, want 1", res.HostCalls)
	}
}

// TestHandles attacks the capability handles: guessed, of another kind,
// not granted, and a granted handle used for another host.
func TestHandles(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["host"]
	grants := Grants{HTTP: []string{"api.example.com"}, Secrets: []string{"token"}, KV: true, Channels: []string{"updates"}}
	get := []byte(`{"method":"GET","url":"https://api.example.com/v1"}`)
	b := &fakeBroker{httpResp: []byte(`{"status":200}`), secrets: map[string]string{"token": "s3cret"}}

	run := func(t *testing.T, in []byte, g Grants) ([]byte, error) {
		t.Helper()
		res, err := m.Run(t.Context(), "do", in, Limits{}, g, b)
		if err != nil {
			return nil, err
		}
		return res.Output, nil
	}

	t.Run("granted", func(t *testing.T) {
		out, err := run(t, doInput(KindHTTP, opHTTP, 0, "api.example.com", get, nil), grants)
		if err != nil {
			t.Fatal(err)
		}
		h, r, result := doOutput(t, out)
		if h <= 0 || r != int64(len(b.httpResp)) || string(result) != string(b.httpResp) {
			t.Errorf("handle %d, result %d %q", h, r, result)
		}
	})
	t.Run("guessed handles", func(t *testing.T) {
		for _, guess := range []int64{1, 2, 42, -1, 1 << 62, 0x7fffffffffffffff} {
			_, err := run(t, doInput(KindHTTP, opHTTP, guess, "", get, nil), grants)
			wantError(t, err, ClassCapabilityDenied, "")
			_, err = run(t, doInput(KindSecret, opSecret, guess, "", nil, nil), grants)
			wantError(t, err, ClassCapabilityDenied, "")
		}
	})
	t.Run("handle of another kind", func(t *testing.T) {
		// A secret's handle passed to http_request, kv_get and channel_send.
		for _, op := range []int32{opHTTP, opKVGet, opSend} {
			_, err := run(t, doInput(KindSecret, op, 0, "token", get, nil), grants)
			wantError(t, err, ClassCapabilityDenied, "")
		}
	})
	t.Run("not granted", func(t *testing.T) {
		for _, tc := range []struct {
			kind int32
			name string
		}{
			{KindHTTP, "evil.example.com"}, {KindHTTP, "API.EXAMPLE.COM"}, {KindHTTP, "api.example.com."},
			{KindSecret, "other"}, {KindChannel, "other"},
		} {
			out, err := run(t, doInput(tc.kind, opNone, 0, tc.name, nil, nil), grants)
			if err != nil {
				t.Fatal(err)
			}
			if h, _, _ := doOutput(t, out); h != int64(ErrDenied) {
				t.Errorf("handle(%d, %q) = %d, want ErrDenied", tc.kind, tc.name, h)
			}
		}
		out, err := run(t, doInput(KindKV, opNone, 0, "", nil, nil), Grants{})
		if err != nil {
			t.Fatal(err)
		}
		if h, _, _ := doOutput(t, out); h != int64(ErrDenied) {
			t.Errorf("kv handle without the grant = %d", h)
		}
	})
	t.Run("another host with a granted handle", func(t *testing.T) {
		b.mu.Lock()
		before := len(b.requests)
		b.mu.Unlock()
		both := Grants{HTTP: []string{"api.example.com", "other.example.com"}}
		for _, url := range []string{
			"https://evil.example.com/", "https://other.example.com/", "http://127.0.0.1/",
			"https://api.example.com.evil.example.com/", "https://evil.example.com/?https://api.example.com/",
		} {
			req := fmt.Appendf(nil, `{"method":"GET","url":%q}`, url)
			out, err := run(t, doInput(KindHTTP, opHTTP, 0, "api.example.com", req, nil), both)
			if err != nil {
				t.Fatal(err)
			}
			if _, r, _ := doOutput(t, out); r != int64(ErrDenied) {
				t.Errorf("%s with the api.example.com handle: %d, want ErrDenied", url, r)
			}
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.requests) != before {
			t.Errorf("the broker was asked: %v", b.requests[before:])
		}
	})
	t.Run("stale handle", func(t *testing.T) {
		// A handle issued to one call is worthless in the next.
		out, err := run(t, doInput(KindHTTP, opNone, 0, "api.example.com", nil, nil), grants)
		if err != nil {
			t.Fatal(err)
		}
		h, _, _ := doOutput(t, out)
		_, err = run(t, doInput(KindHTTP, opHTTP, h, "", get, nil), grants)
		wantError(t, err, ClassCapabilityDenied, "")
	})
	t.Run("handles differ per instance", func(t *testing.T) {
		seen := map[int64]bool{}
		for range 20 {
			out, err := run(t, doInput(KindKV, opNone, 0, "", nil, nil), grants)
			if err != nil {
				t.Fatal(err)
			}
			h, _, _ := doOutput(t, out)
			if h <= 0 || seen[h] {
				t.Fatalf("handle %d (seen before: %v)", h, seen[h])
			}
			seen[h] = true
		}
	})
}

// TestHTTPForwarded: the broker gets the canonical request, not the
// guest's bytes; malformed requests never reach it.
func TestHTTPForwarded(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["host"]
	b := &fakeBroker{httpResp: []byte(`{"status":204}`)}
	g := Grants{HTTP: []string{"api.example.com"}}
	req := []byte(` {"body":"aGk=", "headers":{"X-Trace":"1","Accept":"application/json"},
		"url":"https://api.example.com:8443/v1/items?q=1", "method":"POST"} `)
	res, err := m.Run(t.Context(), "do", doInput(KindHTTP, opHTTP, 0, "api.example.com", req, nil), Limits{}, g, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, r, _ := doOutput(t, res.Output); r != int64(len(b.httpResp)) {
		t.Fatalf("result %d", r)
	}
	want := `{"method":"POST","url":"https://api.example.com:8443/v1/items?q=1","headers":{"accept":["application/json"],"x-trace":["1"]},"body":"aGk="}`
	if len(b.requests) != 1 || b.requests[0].host != "api.example.com" || b.requests[0].request != want {
		t.Fatalf("broker got %+v, want %s", b.requests, want)
	}

	// Broker errors become codes; a non-code error is ErrUnavailable.
	for _, tc := range []struct {
		err  error
		want int64
	}{
		{ErrDenied, int64(ErrDenied)},
		{fmt.Errorf("resolving: %w", ErrDenied), int64(ErrDenied)},
		{ErrQuota, int64(ErrQuota)},
		{fmt.Errorf("dial tcp: connection refused"), int64(ErrUnavailable)},
		{Code(-99), int64(ErrUnavailable)},
	} {
		b := &fakeBroker{httpErr: tc.err}
		res, err := m.Run(t.Context(), "do", doInput(KindHTTP, opHTTP, 0, "api.example.com", req, nil), Limits{}, g, b)
		if err != nil {
			t.Fatal(err)
		}
		if _, r, _ := doOutput(t, res.Output); r != tc.want {
			t.Errorf("broker error %v: %d, want %d", tc.err, r, tc.want)
		}
	}

	// No broker at all.
	res, err = m.Run(t.Context(), "do", doInput(KindHTTP, opHTTP, 0, "api.example.com", req, nil), Limits{}, g, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, r, _ := doOutput(t, res.Output); r != int64(ErrUnavailable) {
		t.Errorf("without a broker: %d", r)
	}
}

func TestSecretKVChannel(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["host"]
	const secret = "hunter2-s3cret-value"
	b := &fakeBroker{secrets: map[string]string{"token": secret, "empty": ""}}
	g := Grants{Secrets: []string{"token", "missing", "empty"}, KV: true, Channels: []string{"updates"}}
	do := func(kind, op int32, name string, a, bb []byte) (int64, []byte, *Result) {
		t.Helper()
		res, err := m.Run(t.Context(), "do", doInput(kind, op, 0, name, a, bb), Limits{MaxMessages: 1, MaxMessageBytes: 10}, g, b)
		if err != nil {
			t.Fatal(err)
		}
		h, r, result := doOutput(t, res.Output)
		if h <= 0 {
			t.Fatalf("handle(%d, %q) = %d", kind, name, h)
		}
		return r, result, res
	}

	r, v, res := do(KindSecret, opSecret, "token", nil, nil)
	if r != int64(len(secret)) || string(v) != secret {
		t.Errorf("secret_get: %d %q", r, v)
	}
	if strings.Contains(fmt.Sprint(res.Logs, string(res.Stdout), string(res.Stderr)), secret) {
		t.Error("the secret shows up in the logs")
	}
	if r, _, _ := do(KindSecret, opSecret, "missing", nil, nil); r != int64(ErrNotFound) {
		t.Errorf("missing secret: %d", r)
	}
	if r, _, _ := do(KindSecret, opSecret, "empty", nil, nil); r != 0 {
		t.Errorf("empty secret: %d", r)
	}

	if r, _, _ := do(KindKV, opKVPut, "", []byte("greeting"), []byte("hello")); r != 0 {
		t.Errorf("kv_put: %d", r)
	}
	if r, v, _ := do(KindKV, opKVGet, "", []byte("greeting"), nil); r != 5 || string(v) != "hello" {
		t.Errorf("kv_get: %d %q", r, v)
	}
	if r, v, _ := do(KindKV, opKVList, "", nil, nil); r != 9 || string(v) != `["a","b"]` {
		t.Errorf("kv_list with an empty prefix: %d %q", r, v)
	}
	if r, _, _ := do(KindKV, opKVDelete, "", []byte("greeting"), nil); r != 0 {
		t.Errorf("kv_delete: %d", r)
	}
	if r, _, _ := do(KindKV, opKVGet, "", []byte("greeting"), nil); r != int64(ErrNotFound) {
		t.Errorf("kv_get after delete: %d", r)
	}
	for _, key := range []string{"", "a\nb", "a\x00", "\xff\xfe", strings.Repeat("k", MaxKeyBytes+1)} {
		if r, _, _ := do(KindKV, opKVGet, "", []byte(key), nil); r != int64(ErrInvalid) {
			t.Errorf("kv_get(%q): %d, want ErrInvalid", key, r)
		}
	}
	b.mu.Lock()
	ops := strings.Join(b.kvOps, ",")
	b.mu.Unlock()
	if ops != "put greeting,get greeting,list ,delete greeting,get greeting" {
		t.Errorf("broker kv ops: %s", ops)
	}

	_, _, res = do(KindChannel, opSend, "updates", []byte("done!"), nil)
	if len(res.Messages) != 1 || res.Messages[0].Channel != "updates" || string(res.Messages[0].Body) != "done!" {
		t.Errorf("messages %+v", res.Messages)
	}
	if r, _, _ := do(KindChannel, opSend, "updates", []byte("far too long"), nil); r != int64(ErrQuota) {
		t.Errorf("long message: %d", r)
	}
}

// TestHostCallFlood: a guest that calls the host in a loop is cut off.
func TestHostCallFlood(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["host"]
	in := binary.LittleEndian.AppendUint32(nil, 1_000_000)
	res, err := m.Run(t.Context(), "flood", in, Limits{Fuel: hugeFuel}, Grants{}, nil)
	e := wantError(t, err, ClassQuotaExceeded, ResourceHostCalls)
	if e.HostCalls != DefaultMaxHostCalls+1 || res.HostCalls != e.HostCalls {
		t.Errorf("%d host calls", e.HostCalls)
	}
	// Host calls cost fuel: 10,000 of them are over a 1M budget.
	_, err = m.Run(t.Context(), "flood", binary.LittleEndian.AppendUint32(nil, 10_000), Limits{Fuel: 1_000_000}, Grants{}, nil)
	wantError(t, err, ClassQuotaExceeded, ResourceFuel)
	// Under both, it runs.
	if _, err := m.Run(t.Context(), "flood", binary.LittleEndian.AppendUint32(nil, 100), Limits{}, Grants{}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestLogCap(t *testing.T) {
	t.Parallel()
	m := fixtures(t)["host"]
	logIn := func(level, count uint32, text string) []byte {
		in := binary.LittleEndian.AppendUint32(nil, level)
		in = binary.LittleEndian.AppendUint32(in, count)
		return append(in, text...)
	}
	res, err := m.Run(t.Context(), "log", logIn(LogWarn, 3, "héllo \xff"), Limits{}, Grants{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Logs) != 3 || res.Logs[0] != (LogLine{slog.LevelWarn, "héllo \uFFFD"}) || res.LogTruncated || le32(res.Output) != 0 {
		t.Errorf("logs %+v truncated %v rc %d", res.Logs, res.LogTruncated, int32(le32(res.Output)))
	}

	line := strings.Repeat("é", 500) // 1000 bytes
	res, err = m.Run(t.Context(), "log", logIn(LogInfo, 100, line), Limits{MaxLogBytes: 4501}, Grants{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, l := range res.Logs {
		total += len(l.Text)
		if !strings.HasPrefix(line, l.Text) {
			t.Fatalf("line %q is not a clean prefix", l.Text)
		}
	}
	if total != 4500 || len(res.Logs) != 5 || !res.LogTruncated || int32(le32(res.Output)) != int32(ErrQuota) {
		t.Errorf("%d lines, %d bytes, truncated %v, rc %d", len(res.Logs), total, res.LogTruncated, int32(le32(res.Output)))
	}

	res, err = m.Run(t.Context(), "log", logIn(7, 1, "x"), Limits{}, Grants{}, nil)
	if err != nil || int32(le32(res.Output)) != int32(ErrInvalid) || len(res.Logs) != 0 {
		t.Errorf("bad level: %v %v", err, res)
	}
}

// TestBadArgs: out-of-bounds pointers and lengths, and unknown kinds, are
// ErrInvalid, never a crash.
func TestBadArgs(t *testing.T) {
	t.Parallel()
	res, err := fixtures(t)["host"].Run(t.Context(), "bad_args", nil, Limits{}, Grants{Secrets: []string{"x"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if r := int64(le64(res.Output[8*i:])); r != int64(ErrInvalid) {
			t.Errorf("call %d returned %d, want ErrInvalid", i, r)
		}
	}
}

// TestOutputCap: stdout, stderr and the output share MaxOutput.
func TestOutputCap(t *testing.T) {
	t.Parallel()
	mods := fixtures(t)
	_, err := mods["echo"].Run(t.Context(), "echo", bytes.Repeat([]byte("x"), 2000), Limits{MaxOutput: 1999}, Grants{}, nil)
	wantError(t, err, ClassQuotaExceeded, ResourceOutput)
	res, err := mods["wasi"].Run(t.Context(), "write_loop", []byte("spam spam spam\n"), Limits{MaxOutput: 10000, Fuel: hugeFuel}, Grants{}, nil)
	wantError(t, err, ClassQuotaExceeded, ResourceOutput)
	if len(res.Stdout) != 10000 {
		t.Errorf("captured %d bytes of stdout", len(res.Stdout))
	}
	// What run writes to stdout and stderr counts: the input twice over
	// does not fit.
	in := bytes.Repeat([]byte("y"), 100)
	_, err = mods["wasi"].Run(t.Context(), "run", in, Limits{MaxOutput: 100 + 4 + 0xc0 - 1}, Grants{}, nil)
	wantError(t, err, ClassQuotaExceeded, ResourceOutput)
	if _, err := mods["wasi"].Run(t.Context(), "run", in, Limits{MaxOutput: 100 + 4 + 0xc0}, Grants{}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestImports(t *testing.T) {
	list := Imports()
	seen := map[Import]bool{}
	for _, i := range list {
		if seen[i] {
			t.Errorf("%v twice", i)
		}
		seen[i] = true
		if _, ok := signatures[i]; !ok {
			t.Errorf("%v has no signature", i)
		}
	}
	if len(list) != len(stockadeFuncs)+46 {
		t.Errorf("%d imports", len(list))
	}
	for _, name := range []string{FnABIVersion, FnLog, FnHandle, FnHTTPRequest, FnSecretGet, FnKVGet, FnKVPut, FnKVDelete, FnKVList, FnChannelSend, FnResultRead} {
		if !seen[Import{HostModule, name}] {
			t.Errorf("stockade.%s missing", name)
		}
	}
}
