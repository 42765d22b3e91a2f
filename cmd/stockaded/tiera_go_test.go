//go:build linux

package main

// The Go SDK's example skills through the whole system: ordinary Go
// (testdata/skills/gohello and gokv, built for wasip1 by `make skills`),
// signed, installed and promoted through admin.sock, resolved by the
// broker, instrumented, and run in wazero inside a confined executor, with
// the broker performing the capabilities (kv, a secret, a channel).
//
// A Go module is about 3.5 MB: the executor compiles the instrumented
// module for a few seconds before the first call (later calls may find a
// warm executor that compiled it already). Calls get a generous timeout,
// and the suite makes few of them.

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/client"
	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/skill"
)

// goSigningKey is gokv's secret signing_key, configured in the broker.
const goSigningKey = "g0-s1gning-k3y-91c4"

// goCallTimeoutMS bounds a Go skill's call. Compilation happens before the
// call's clock starts; the call itself takes milliseconds, or runs until
// its fuel is gone.
const goCallTimeoutMS = 60_000

// goSkillsConfig enables the two examples with the grants gokv's manifest
// asks for.
var goSkillsConfig = fmt.Sprintf(`
[[skill]]
id = "stockade.gohello"
timeout = "60s"

[[skill]]
id = "stockade.gokv"
secrets = { signing_key = %q }
storage = true
channels = ["notify"]
timeout = "60s"
`, goSigningKey)

// buildGoSkill packages the Go SDK's example skill name from a staged copy
// of its directory (skill.toml and modules/, without src/, which
// skill.Build refuses), and writes archive and signature to files.
func buildGoSkill(t *testing.T, key ed25519.PrivateKey, name string) (archive, sig string) {
	t.Helper()
	src := filepath.Join("..", "..", "testdata", "skills", name)
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "modules"), os.DirFS(filepath.Join(src, "modules"))); err != nil {
		t.Fatal(err)
	}
	m, err := os.ReadFile(filepath.Join(src, skill.ManifestPath))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, skill.ManifestPath), m, 0o644); err != nil {
		t.Fatal(err)
	}
	a, e, err := skill.Build(dir, key)
	if err != nil {
		t.Fatalf("packaging %s: %v", name, err)
	}
	out := t.TempDir()
	archive, sig = filepath.Join(out, name+".skill"), filepath.Join(out, name+".skill.sig")
	if err := os.WriteFile(archive, a, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sig, e, 0o644); err != nil {
		t.Fatal(err)
	}
	return archive, sig
}

// goCall calls a Go skill's tool and logs how long the call took, end to
// end and in the broker's account.
func goCall(t *testing.T, s *system, tool, input string) *ipc.Outcome {
	t.Helper()
	c, err := client.Dial(s.socket, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t0 := time.Now()
	out, err := c.Call(&ipc.CallRequest{Tool: tool, Input: input, RunID: "tier-a-go", TimeoutMS: goCallTimeoutMS})
	elapsed := time.Since(t0)
	if err != nil {
		t.Fatalf("%s: %v (after %v)", tool, err, elapsed)
	}
	if out.Tier != "A" || out.Wasm == nil {
		t.Fatalf("%s: tier %q, receipt %+v", tool, out.Tier, out.Wasm)
	}
	t.Logf("%s: %s in %v (broker total %v, spawn %v), fuel %d, host calls %d",
		tool, out.Status, elapsed.Round(time.Millisecond), time.Duration(out.Durations.Total)*time.Microsecond,
		time.Duration(out.Durations.Spawn)*time.Microsecond, out.Wasm.FuelUsed, out.Wasm.HostCalls)
	return out
}

// goOK is goCall for a call that must succeed; it decodes the output into v.
func goOK(t *testing.T, s *system, tool, input string, v any) *ipc.Outcome {
	t.Helper()
	out := goCall(t, s, tool, input)
	if out.Status != ipc.StatusOK {
		t.Fatalf("%s: status %s, receipt %+v, stderr %q", tool, out.Status, out.Wasm, out.Stderr)
	}
	if err := json.Unmarshal(out.Stdout, v); err != nil {
		t.Fatalf("%s: output %q: %v", tool, out.Stdout, err)
	}
	return out
}

func hasLog(logs []string, text string) bool {
	for _, l := range logs {
		if strings.Contains(l, text) {
			return true
		}
	}
	return false
}

// TestTierAGo runs the Go SDK's examples through the system: five calls
// of Go modules (the subtests run in order: gokv's get reads its put).
func TestTierAGo(t *testing.T) {
	s := startSystem(t, testConfig+goSkillsConfig)
	adminSock := filepath.Join(s.runtime, ipc.AdminSocketName)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gohello", "gokv"} {
		a, sig := buildGoSkill(t, key, name)
		r := installSkill(t, adminSock, a, sig)
		t.Logf("installed %s %s (%s)", r.ID, r.Version, r.Digest)
	}

	t.Run("gohello greets", func(t *testing.T) {
		var got struct {
			Greeting string `json:"greeting"`
		}
		out := goOK(t, s, "stockade.gohello/greet", `{"name":"Ada"}`, &got)
		if got.Greeting != "Hello, Ada!" {
			t.Errorf("greeting %q", got.Greeting)
		}
		w := out.Wasm
		if w.FuelUsed == 0 || !strings.HasPrefix(w.Instrumented, "sha256:") || !strings.HasPrefix(w.Skill, "stockade.gohello@") {
			t.Errorf("receipt: %+v", w)
		}
		if len(w.Logs) != 1 || !strings.Contains(w.Logs[0], "greeting someone") {
			t.Errorf("logs: %q", w.Logs)
		}
		if out.Sandbox.Tier != "A" || out.Sandbox.LandlockABI == 0 || out.Sandbox.Seccomp == "" {
			t.Errorf("the executor did not confine itself: %+v", out.Sandbox)
		}
		if out.Attestation == nil {
			t.Error("no attestation")
		}
	})

	t.Run("gohello runs out of fuel", func(t *testing.T) {
		// 1,000,000 rounds over a 34-byte name: 34 million turns of
		// the inner loop, past the default budget of 10,000,000.
		out := goCall(t, s, "stockade.gohello/greet", `{"name":"Ada Lovelace, Countess of Lovelace","rounds":1000000}`)
		if out.Status != ipc.StatusQuotaExceeded || out.Wasm.Resource != "fuel" {
			t.Fatalf("status %s, receipt %+v", out.Status, out.Wasm)
		}
		if out.Wasm.FuelUsed < 10_000_000 || len(out.Stdout) != 0 {
			t.Errorf("fuel used %d, output %q", out.Wasm.FuelUsed, out.Stdout)
		}
	})

	t.Run("gokv put then get", func(t *testing.T) {
		var put struct {
			OK bool `json:"ok"`
		}
		goOK(t, s, "stockade.gokv/put", `{"key":"greeting","value":"hello from Go"}`, &put)
		if !put.OK {
			t.Fatal("put did not answer ok")
		}
		var got struct {
			Key   string `json:"key"`
			Found bool   `json:"found"`
			Value string `json:"value"`
		}
		out := goOK(t, s, "stockade.gokv/get", `{"key":"greeting"}`, &got)
		if got.Key != "greeting" || !got.Found || got.Value != "hello from Go" {
			t.Fatalf("get: %q", out.Stdout)
		}
		if out.Wasm.HostCalls == 0 {
			t.Errorf("get made no host call: %+v", out.Wasm)
		}
	})

	t.Run("gokv signs with its secret", func(t *testing.T) {
		const message = "pay 10 to Ada"
		var got struct {
			MAC string `json:"mac"`
		}
		out := goOK(t, s, "stockade.gokv/sign", fmt.Sprintf(`{"message":%q}`, message), &got)
		m := hmac.New(sha256.New, []byte(goSigningKey))
		m.Write([]byte(message))
		if want := hex.EncodeToString(m.Sum(nil)); got.MAC != want {
			t.Fatalf("mac %s, want %s", got.MAC, want)
		}
		if !hasLog(out.Wasm.Logs, "signed a message") {
			t.Errorf("logs: %q", out.Wasm.Logs)
		}
		if strings.Contains(s.logs.String(), goSigningKey) || strings.Contains(string(out.Stdout)+string(out.Stderr), goSigningKey) {
			t.Error("the secret is in the logs or the output")
		}
	})

	// How long the executors took to compile the instrumented modules,
	// for the calls (cold) and the warm executors prepared after them.
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, "compile_ms") {
			t.Log(l)
		}
	}
}
