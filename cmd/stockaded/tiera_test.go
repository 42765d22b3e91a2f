//go:build linux

package main

// Tier A through the whole system: a real skill, signed, installed and
// promoted through admin.sock, resolved by the broker, instrumented, run in
// wazero inside a confined executor, with the broker performing its
// capabilities.

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/broker/attest"
	"github.com/stockade-dev/stockade/client"
	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/admin"
	"github.com/stockade-dev/stockade/verifier/skill"
)

const probeSecret = "pr0be-s3cret-value-7f3a"

type tierAEnv struct {
	s      *system
	admin  string
	server *httptest.Server
	other  *httptest.Server // on loopback too, not granted
	key    ed25519.PrivateKey
	probe  admin.Release // stockade.probe as installed
}

// buildSkill packages the skill source dir (with its id changed to id when
// id is set) and writes archive and signature to files.
func buildSkill(t *testing.T, key ed25519.PrivateKey, src, id string) (archive, sig string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if id != "" {
		p := filepath.Join(dir, "skill.toml")
		b, _ := os.ReadFile(p)
		b = []byte(strings.Replace(string(b), `id          = "stockade.probe"`, fmt.Sprintf("id          = %q", id), 1))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, e, err := skill.Build(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	archive, sig = filepath.Join(out, "probe.skill"), filepath.Join(out, "probe.skill.sig")
	if err := os.WriteFile(archive, a, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sig, e, 0o644); err != nil {
		t.Fatal(err)
	}
	return archive, sig
}

// installSkill installs and promotes a skill through admin.sock.
func installSkill(t *testing.T, sock, archive, sig string) admin.Release {
	t.Helper()
	c, err := admin.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	af, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer af.Close()
	sf, err := os.Open(sig)
	if err != nil {
		t.Fatal(err)
	}
	defer sf.Close()
	r, err := c.Install(af, sf)
	if err != nil {
		t.Fatalf("install: %v", err)
	}
	if r, err = c.Promote(r.ID, r.Version, r.Digest); err != nil {
		t.Fatalf("promote: %v", err)
	}
	return r
}

func startTierA(t *testing.T) *tierAEnv {
	t.Helper()
	e := &tierAEnv{}
	e.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if v := r.Header.Get("X-Probe"); v != "" {
			fmt.Fprint(w, "probe header "+v)
			return
		}
		if r.URL.Path == "/big" {
			w.Write(make([]byte, 200<<10))
			return
		}
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "http://localhost:"+portOf(e.server.URL)+"/", http.StatusFound)
			return
		}
		fmt.Fprint(w, "hello from the granted host")
	}))
	t.Cleanup(e.server.Close)
	e.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "SHOULD-NOT-BE-REACHED")
	}))
	t.Cleanup(e.other.Close)
	grants := fmt.Sprintf(`
[[skill]]
id = "stockade.probe"
http = ["127.0.0.1:%s"]
http_private = true
secrets = { token = %q }
storage = true
channels = ["notify"]
max_host_calls = 1000
memory_bytes = 33554432 # 32 MiB: below the module's declared maximum (64 MiB)

[[skill]]
id = "stockade.probe2"
storage = true
`, portOf(e.server.URL), probeSecret)
	e.s = startSystem(t, testConfig+grants)
	e.admin = filepath.Join(e.s.runtime, ipc.AdminSocketName)
	_, e.key, _ = ed25519.GenerateKey(rand.Reader)
	for _, id := range []string{"", "stockade.probe2"} {
		a, sig := buildSkill(t, e.key, "../../testdata/skills/probe", id)
		r := installSkill(t, e.admin, a, sig)
		if id == "" {
			e.probe = r
		}
	}
	return e
}

func portOf(u string) string {
	_, p, _ := net.SplitHostPort(strings.TrimPrefix(u, "http://"))
	return p
}

func (e *tierAEnv) call(t *testing.T, tool, input string) (*ipc.Outcome, error) {
	t.Helper()
	c, err := client.Dial(e.s.socket, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.Call(&ipc.CallRequest{Tool: tool, Input: input, RunID: "tier-a"})
}

func (e *tierAEnv) ok(t *testing.T, tool, input string) *ipc.Outcome {
	t.Helper()
	out, err := e.call(t, tool, input)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if out.Status != ipc.StatusOK || out.Wasm == nil {
		t.Fatalf("%s: %+v %+v", tool, out, out.Wasm)
	}
	return out
}

func TestTierA(t *testing.T) {
	e := startTierA(t)

	t.Run("echo", func(t *testing.T) {
		out := e.ok(t, "stockade.probe/echo", `{"hello":"world"}`)
		if string(out.Stdout) != `{"hello":"world"}` || out.Tier != "A" {
			t.Fatalf("echo: %q tier %s", out.Stdout, out.Tier)
		}
		w := out.Wasm
		if w.FuelUsed == 0 || w.FuelSchedule != 1 || !strings.HasPrefix(w.Instrumented, "sha256:") || len(w.Logs) != 1 || !strings.Contains(w.Logs[0], "probe log line") {
			t.Errorf("receipt: %+v", w)
		}
		if out.Sandbox.Tier != "A" || out.Sandbox.LandlockABI == 0 || out.Sandbox.Seccomp == "" {
			t.Errorf("the executor did not confine itself: %+v", out.Sandbox)
		}
		// The broker compiled the module; the executor loaded its code.
		if !slices.Contains(out.Sandbox.Layers, "precompiled") {
			t.Errorf("the executor compiled the module itself: layers %v", out.Sandbox.Layers)
		}
		if out.Attestation == nil {
			t.Fatal("no attestation")
		}
		// The record names the release and the module as signed and as
		// instrumented, and the fuel the call used.
		files, err := attest.LogFiles(filepath.Join(e.s.state, "broker", attest.LogDirName))
		if err != nil {
			t.Fatal(err)
		}
		o, err := exec.Command(filepath.Join(binDir, "stockade"), append([]string{"attest", "show", "--json", "--run", "tier-a"}, files...)...).Output()
		if err != nil {
			t.Fatal(err)
		}
		line := ""
		for l := range strings.SplitSeq(string(o), "\n") {
			if strings.Contains(l, out.CallID) {
				line = l
			}
		}
		stmt := strings.TrimPrefix(e.probe.Digest, "sha256:")
		inst := strings.TrimPrefix(w.Instrumented, "sha256:")
		if stmt == "" || !strings.Contains(line, stmt) || !strings.Contains(line, inst) || !strings.Contains(line, `"kind":"skill"`) ||
			!strings.Contains(line, fmt.Sprintf(`"fuel":%d`, w.FuelUsed)) || !strings.Contains(line, `"fuel_schedule":"stockade-fuel/1"`) {
			t.Errorf("the attestation does not bind the release (%s), the instrumented module (%s) or the fuel (%d):\n%s", stmt, inst, w.FuelUsed, line)
		}
	})

	t.Run("fuel is deterministic", func(t *testing.T) {
		first := e.ok(t, "stockade.probe/echo", `{"n":1}`).Wasm.FuelUsed
		for i := range 99 {
			if got := e.ok(t, "stockade.probe/echo", `{"n":1}`).Wasm.FuelUsed; got != first {
				t.Fatalf("run %d used %d fuel, the first %d", i+2, got, first)
			}
		}
	})

	for _, tc := range []struct {
		tool, resource string
	}{
		{"spin", "fuel"}, {"fib", "fuel"}, {"recurse", "depth"}, {"grow", "memory"}, {"fill", "fuel"}, {"flood", "host_calls"},
	} {
		t.Run("limit "+tc.tool, func(t *testing.T) {
			t0 := time.Now()
			out, err := e.call(t, "stockade.probe/"+tc.tool, "{}")
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != ipc.StatusQuotaExceeded || out.Wasm == nil || out.Wasm.Resource != tc.resource {
				t.Fatalf("%s: status %s, wasm %+v", tc.tool, out.Status, out.Wasm)
			}
			t.Logf("%s: quota_exceeded(%s) after %v, fuel %d", tc.tool, tc.resource, time.Since(t0), out.Wasm.FuelUsed)
		})
	}

	t.Run("timeout", func(t *testing.T) {
		c, err := client.Dial(e.s.socket, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		out, err := c.Call(&ipc.CallRequest{Tool: "stockade.probe/spin", Input: "{}", TimeoutMS: 2})
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != ipc.StatusTimedOut {
			t.Fatalf("spin with a 2 ms deadline: %s %+v", out.Status, out.Wasm)
		}
	})

	t.Run("request shape", func(t *testing.T) {
		c, err := client.Dial(e.s.socket, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.Call(&ipc.CallRequest{Tool: "stockade.probe/echo", Input: "{}", TimeoutMS: -1})
		wantClass(t, err, ipc.ClassInvalidInput)
	})

	t.Run("guessed handle", func(t *testing.T) {
		_, err := e.call(t, "stockade.probe/guess", "{}")
		wantClass(t, err, ipc.ClassCapabilityDenied)
	})

	t.Run("secret stays secret", func(t *testing.T) {
		out := e.ok(t, "stockade.probe/secret", "{}")
		if string(out.Stdout) != `"ok"` {
			t.Fatalf("secret: %q", out.Stdout)
		}
		// The second skill is granted no secret.
		out = e.ok(t, "stockade.probe2/secret", "{}")
		if string(out.Stdout) != `"no_handle"` {
			t.Fatalf("secret of another skill: %q", out.Stdout)
		}
		if strings.Contains(e.s.logs.String(), probeSecret) {
			t.Error("the secret is in the logs")
		}
		files, err := attest.LogFiles(filepath.Join(e.s.state, "broker", attest.LogDirName))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if strings.Contains(string(b), probeSecret) {
				t.Errorf("the secret is in the attestation log %s", f)
			}
		}
	})

	t.Run("http", func(t *testing.T) {
		req := func(url string) string {
			b, _ := json.Marshal(map[string]string{"method": "GET", "url": url})
			return string(b)
		}
		out := e.ok(t, "stockade.probe/http_ip", req(e.server.URL+"/"))
		var resp struct {
			Status int    `json:"status"`
			Body   string `json:"body"`
		}
		if err := json.Unmarshal(out.Stdout, &resp); err != nil {
			t.Fatalf("response %q: %v", out.Stdout, err)
		}
		body, _ := base64.StdEncoding.DecodeString(resp.Body)
		if resp.Status != 200 || string(body) != "hello from the granted host" {
			t.Fatalf("granted host: %q", out.Stdout)
		}
		// A header, and a response over the control frame cap.
		b, _ := json.Marshal(map[string]any{"method": "GET", "url": e.server.URL + "/", "headers": map[string]string{"X-Probe": "yes"}})
		out = e.ok(t, "stockade.probe/http_ip", string(b))
		if err := json.Unmarshal(out.Stdout, &resp); err != nil {
			t.Fatalf("response %q: %v", out.Stdout, err)
		}
		if body, _ := base64.StdEncoding.DecodeString(resp.Body); string(body) != "probe header yes" {
			t.Errorf("with a header: %q", out.Stdout)
		}
		out = e.ok(t, "stockade.probe/http_ip", req(e.server.URL+"/big"))
		if !strings.Contains(string(out.Stdout), `"status":200`) {
			t.Errorf("a 200 KiB response: %.100q", out.Stdout)
		}
		for _, tc := range []struct{ tool, url, want string }{
			{"http_name", e.server.URL + "/", `"no_handle"`},                                    // localhost is not granted
			{"http_ip", e.other.URL + "/", `"denied"`},                                          // another port of 127.0.0.1
			{"http_ip", strings.Replace(e.server.URL, "127.0.0.1", "localhost", 1), `"denied"`}, // by name through the IP's handle
			{"http_ip", e.server.URL + "/redirect", `"denied"`},                                 // a redirect to another host
		} {
			out := e.ok(t, "stockade.probe/"+tc.tool, req(tc.url))
			if string(out.Stdout) != tc.want {
				t.Errorf("%s %s: %q, want %s", tc.tool, tc.url, out.Stdout, tc.want)
			}
		}
	})

	t.Run("kv is per skill", func(t *testing.T) {
		if out := e.ok(t, "stockade.probe/kv_put", `{"v":"mine"}`); string(out.Stdout) != `"ok"` {
			t.Fatalf("put: %q", out.Stdout)
		}
		if out := e.ok(t, "stockade.probe/kv_get", "{}"); string(out.Stdout) != `{"v":"mine"}` {
			t.Fatalf("get: %q", out.Stdout)
		}
		if out := e.ok(t, "stockade.probe2/kv_get", "{}"); string(out.Stdout) != `"not_found"` {
			t.Fatalf("another skill read the first one's key: %q", out.Stdout)
		}
	})

	t.Run("the call narrows its grants", func(t *testing.T) {
		c, err := client.Dial(e.s.socket, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, tc := range []struct {
			tool   string
			grants ipc.Grants
			want   string
		}{
			{"secret", ipc.Grants{}, `"no_handle"`},
			{"secret", ipc.Grants{Secrets: []string{"token"}}, `"ok"`},
			{"kv_get", ipc.Grants{Secrets: []string{"token"}}, `"no_handle"`},
			{"notify", ipc.Grants{KV: true}, `"no_handle"`},
			{"notify", ipc.Grants{Channels: []string{"notify", "other"}}, `"ok"`},
		} {
			out, err := c.Call(&ipc.CallRequest{Tool: "stockade.probe/" + tc.tool, Input: "{}", Grants: &tc.grants})
			if err != nil || string(out.Stdout) != tc.want {
				t.Errorf("%s with %+v: %+v %v, want %s", tc.tool, tc.grants, out, err, tc.want)
			}
		}
	})

	t.Run("channel", func(t *testing.T) {
		out := e.ok(t, "stockade.probe/notify", `{"msg":"hi"}`)
		if len(out.Wasm.Messages) != 1 || out.Wasm.Messages[0].Channel != "notify" || string(out.Wasm.Messages[0].Body) != `{"msg":"hi"}` {
			t.Fatalf("messages: %+v", out.Wasm.Messages)
		}
		if out := e.ok(t, "stockade.probe2/notify", `{}`); string(out.Stdout) != `"no_handle"` {
			t.Fatalf("ungranted channel: %q", out.Stdout)
		}
	})

	t.Run("tools and tiers", func(t *testing.T) {
		c, err := client.Dial(e.s.socket, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		tools, err := c.Tools()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, tool := range tools {
			found = found || (tool.Name == "stockade.probe/echo" && tool.Tier == "A" && tool.Kind == "skill")
		}
		if !found {
			t.Errorf("the skill's tools are not listed: %+v", tools)
		}
		if st := e.s.status(); !slices.Contains(st.Tiers, "A") {
			t.Errorf("tiers %v", st.Tiers)
		}
	})

	t.Run("cli", func(t *testing.T) {
		o, errOut, code := runCLI(t, "stockade", "--socket", e.s.socket, "call", "stockade.probe/echo", "--input", `{"cli":true}`)
		if code != 0 || o != `{"cli":true}` || !strings.Contains(errOut, "probe log line") {
			t.Errorf("echo: %q %q %d", o, errOut, code)
		}
		o, errOut, code = runCLI(t, "stockade", "--socket", e.s.socket, "call", "stockade.probe/recurse")
		if code != 125 || !strings.Contains(errOut, "quota_exceeded: depth") {
			t.Errorf("recurse: %q %q %d", o, errOut, code)
		}
	})

	t.Run("revocation stops the next call", func(t *testing.T) {
		e.ok(t, "stockade.probe2/echo", "{}")
		c, err := admin.Dial(e.admin)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		info, err := c.Show("stockade.probe2")
		if err != nil || info.Current == "" {
			t.Fatalf("show: %+v %v", info, err)
		}
		if err := c.RevokeSkill("stockade.probe2", info.Current); err != nil {
			t.Fatal(err)
		}
		_, err = e.call(t, "stockade.probe2/echo", "{}")
		wantClass(t, err, ipc.ClassDenied)
		e.ok(t, "stockade.probe/echo", "{}") // the other skill is untouched
	})
}

// BenchmarkTierACall measures a trivial skill call (the probe's echo)
// through the whole system: client → broker (resolve, instrumentation
// cache, policy, attestation) → executor (warm: already confined, module
// loaded) → back. "back-to-back" issues the calls one after the other, so
// on two cores the executors being made warm for the next calls compete
// with the call measured; "paced" leaves 20 ms (untimed) between calls, as
// an agent thinking between tool calls would, so each call finds a warm
// executor. Both report the median (p50-ns) and the 90th percentile.
//
//	go test -run '^$' -bench BenchmarkTierACall -benchtime 300x ./cmd/stockaded
func BenchmarkTierACall(b *testing.B) {
	s := startTierABench(b)
	for _, gap := range []time.Duration{0, 20 * time.Millisecond} {
		name := "back-to-back"
		if gap > 0 {
			name = "paced"
		}
		b.Run(name, func(b *testing.B) {
			c, err := client.Dial(s.socket, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := &ipc.CallRequest{Tool: "stockade.probe/echo", Input: `{"x":1}`}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				if gap > 0 {
					b.StopTimer()
					time.Sleep(gap)
					b.StartTimer()
				}
				t0 := time.Now()
				if out, err := c.Call(req); err != nil || out.Status != ipc.StatusOK {
					b.Fatalf("%+v %v", out, err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*9/10].Nanoseconds()), "p90-ns")
		})
	}
	if os.Getenv("STOCKADE_BENCH_LOGS") != "" {
		_ = os.WriteFile(os.Getenv("STOCKADE_BENCH_LOGS"), []byte(s.logs.String()), 0o644)
	}
}

func startTierABench(b *testing.B) *system {
	s := startSystem(b, testConfig+"\n[[skill]]\nid = \"stockade.probe\"\n")
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	dir := b.TempDir()
	a, sig, err := skill.Build("../../testdata/skills/probe", key)
	if err != nil {
		b.Fatal(err)
	}
	ap, sp := filepath.Join(dir, "p.skill"), filepath.Join(dir, "p.skill.sig")
	if err := os.WriteFile(ap, a, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(sp, sig, 0o644); err != nil {
		b.Fatal(err)
	}
	c, err := admin.Dial(filepath.Join(s.runtime, ipc.AdminSocketName))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	af, _ := os.Open(ap)
	sf, _ := os.Open(sp)
	defer af.Close()
	defer sf.Close()
	r, err := c.Install(af, sf)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := c.Promote(r.ID, r.Version, r.Digest); err != nil {
		b.Fatal(err)
	}
	return s
}

// TestTierAMultiUID: a skill call in multi-uid mode: the executor (a pool
// uid) loads the code the broker compiled into its cache, which it cannot
// write.
func TestTierAMultiUID(t *testing.T) {
	m := startMultiUID(t, testConfig+"\n[[skill]]\nid = \"stockade.probe\"\n", 4, nil)
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	a, sig := buildSkill(t, key, "../../testdata/skills/probe", "")
	for _, p := range []string{a, sig, filepath.Dir(a)} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	installSkill(t, filepath.Join(m.runtime, ipc.AdminSocketName), a, sig)
	c, err := client.Dial(m.socket, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		out, err := c.Call(&ipc.CallRequest{Tool: "stockade.probe/echo", Input: `{"m":1}`})
		if err != nil || out.Status != ipc.StatusOK || string(out.Stdout) != `{"m":1}` {
			t.Fatalf("%+v %v", out, err)
		}
		if !slices.Contains(out.Sandbox.Layers, "precompiled") {
			t.Errorf("layers %v: the executor did not load the broker's code", out.Sandbox.Layers)
		}
	}
	cache := filepath.Join(m.state, "wasm-cache")
	fi, err := os.Stat(cache)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != lookupUID(t, "stockade-broker") || fi.Mode().Perm() != 0o755 {
		t.Errorf("cache dir owner %d mode %v", st.Uid, fi.Mode().Perm())
	}
	_ = filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			if i, err := d.Info(); err == nil && i.Mode().Perm()&0o022 != 0 {
				t.Errorf("%s is writable by others: %v", p, i.Mode())
			}
		}
		return nil
	})
}

// TestAutoActivate: with auto_activate in the configuration, an update
// signed by the skill's pinned key that asks for nothing new is active at
// once; without it, the same update waits in quarantine.
func TestAutoActivate(t *testing.T) {
	for _, auto := range []bool{true, false} {
		t.Run(fmt.Sprint(auto), func(t *testing.T) {
			s := startSystem(t, fmt.Sprintf("auto_activate = %v\n", auto)+testConfig)
			sock := filepath.Join(s.runtime, ipc.AdminSocketName)
			_, key, _ := ed25519.GenerateKey(rand.Reader)
			a, sig := buildSkill(t, key, "../../testdata/skills/probe", "")
			installSkill(t, sock, a, sig)

			src := t.TempDir()
			if err := os.CopyFS(src, os.DirFS("../../testdata/skills/probe")); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(src, "skill.toml")
			b, _ := os.ReadFile(p)
			b = []byte(strings.NewReplacer(`version     = "1.0.0"`, `version     = "1.0.1"`, "sequence    = 1", "sequence    = 2").Replace(string(b)))
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			a2, sig2 := buildSkill(t, key, src, "")
			c, err := admin.Dial(sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			af, _ := os.Open(a2)
			sf, _ := os.Open(sig2)
			defer af.Close()
			defer sf.Close()
			r, err := c.Install(af, sf)
			if err != nil {
				t.Fatal(err)
			}
			want := "quarantined"
			if auto {
				want = "active"
			}
			if r.Version != "1.0.1" || string(r.State) != want {
				t.Fatalf("update: version %s state %s, want %s", r.Version, r.State, want)
			}
		})
	}
}
