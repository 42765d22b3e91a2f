//go:build !wasip1

package sdk

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

func committedModule(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/skills/" + name + "/modules/" + name + ".wasm")
	if err != nil {
		t.Fatalf("%v (make skills builds it)", err)
	}
	return b
}

type errorOutput struct {
	Error string `json:"error"`
}

// TestGoHello runs the committed gohello module against the fake host.
func TestGoHello(t *testing.T) {
	t.Parallel()
	mod := committedModule(t, "gohello")
	type out struct {
		Greeting string `json:"greeting"`
		FuelHint int    `json:"fuel_hint"`
		Error    string `json:"error"`
	}
	tests := []struct {
		name  string
		input string
		want  out
	}{
		{"greets", `{"name":"Ada"}`, out{Greeting: "Hello, Ada!"}},
		{"rounds", `{"name":"Ada","rounds":1000}`, out{Greeting: "Hello, Ada!", FuelHint: 1000}},
		{"tool error", `{"name":""}`, out{Error: "name is empty"}},
		{"unknown member", `{"name":"Ada","nmae":"x"}`, out{Error: `sdk: invalid input: json: unknown field "nmae"`}},
		{"trailing data", `{"name":"Ada"} {}`, out{Error: "sdk: invalid input: data after the JSON value"}},
		{"not JSON", `name=Ada`, out{Error: "sdk: invalid input: invalid character 'a' in literal null (expecting 'u')"}},
		{"empty input", ``, out{Error: "name is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := instantiate(t, "gohello", mod, newFakeHost())
			b, err := in.call("greet", []byte(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			var got out
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("output %q: %v", b, err)
			}
			if got != tt.want {
				t.Errorf("greet(%s) = %s, want %+v", tt.input, b, tt.want)
			}
			wantLogs := 0
			if tt.want.Error == "" {
				wantLogs = 1
			}
			if len(in.host.logs) != wantLogs {
				t.Errorf("logs = %+v, want %d line(s)", in.host.logs, wantLogs)
			}
		})
	}
}

// TestGoHelloManyCalls: one instance serves call after call (the SDK
// keeps no state a call leaves broken), and the ABI version is asked once.
func TestGoHelloManyCalls(t *testing.T) {
	t.Parallel()
	in := instantiate(t, "gohello", committedModule(t, "gohello"), newFakeHost())
	for i := range 200 {
		var got struct{ Greeting string }
		in.tool("greet", map[string]any{"name": strings.Repeat("x", i)}, &got)
		if i > 0 && got.Greeting != "Hello, "+strings.Repeat("x", i)+"!" {
			t.Fatalf("call %d: %q", i, got.Greeting)
		}
	}
}

// TestGoKV runs the committed gokv module: kv, a secret, a channel.
func TestGoKV(t *testing.T) {
	t.Parallel()
	mod := committedModule(t, "gokv")
	granted := func() *fakeHost {
		h := newFakeHost()
		h.storage = true
		h.secrets["signing_key"] = "s3cr3t-v4lue"
		h.channels["notify"] = true
		return h
	}

	t.Run("kv", func(t *testing.T) {
		t.Parallel()
		in := instantiate(t, "gokv", mod, granted())
		var ok struct{ OK bool }
		in.tool("put", map[string]string{"key": "a/1", "value": "one"}, &ok)
		in.tool("put", map[string]string{"key": "a/2", "value": "two"}, &ok)
		in.tool("put", map[string]string{"key": "b", "value": ""}, &ok)
		if !ok.OK {
			t.Fatal("put not ok")
		}
		type found struct {
			Key   string `json:"key"`
			Found bool   `json:"found"`
			Value string `json:"value"`
		}
		var f found
		in.tool("get", map[string]string{"key": "a/2"}, &f)
		if f != (found{"a/2", true, "two"}) {
			t.Errorf("get a/2 = %+v", f)
		}
		f = found{}
		in.tool("get", map[string]string{"key": "b"}, &f)
		if f != (found{"b", true, ""}) {
			t.Errorf("get b (empty value) = %+v", f)
		}
		var keys struct{ Keys []string }
		in.tool("list", map[string]string{"prefix": "a/"}, &keys)
		if !reflect.DeepEqual(keys.Keys, []string{"a/1", "a/2"}) {
			t.Errorf("list a/ = %q", keys.Keys)
		}
		f = found{}
		in.tool("delete", map[string]string{"key": "a/1"}, &f)
		if !f.Found {
			t.Errorf("delete a/1 = %+v", f)
		}
		f = found{}
		in.tool("get", map[string]string{"key": "a/1"}, &f)
		if f != (found{Key: "a/1"}) {
			t.Errorf("get a/1 after delete = %+v, want not found", f)
		}
		keys.Keys = nil
		in.tool("list", map[string]string{"prefix": "zzz"}, &keys)
		if keys.Keys == nil || len(keys.Keys) != 0 {
			t.Errorf("list zzz = %#v, want []", keys.Keys)
		}
		var e errorOutput
		in.tool("put", map[string]string{"key": "big", "value": strings.Repeat("v", 65)}, &e)
		if e.Error != `sdk: kv_put "big": over a quota` {
			t.Errorf("put over the fake's quota: %q", e.Error)
		}
	})

	t.Run("sign", func(t *testing.T) {
		t.Parallel()
		in := instantiate(t, "gokv", mod, granted())
		var sig struct{ MAC string }
		in.tool("sign", map[string]string{"message": "hello"}, &sig)
		m := hmac.New(sha256.New, []byte("s3cr3t-v4lue"))
		m.Write([]byte("hello"))
		if want := hex.EncodeToString(m.Sum(nil)); sig.MAC != want {
			t.Errorf("mac = %s, want %s", sig.MAC, want)
		}
		for _, l := range in.host.logs {
			if strings.Contains(l.Msg, "s3cr3t") {
				t.Errorf("the secret is in a log line: %q", l.Msg)
			}
		}
	})

	t.Run("notify", func(t *testing.T) {
		t.Parallel()
		in := instantiate(t, "gokv", mod, granted())
		var ok struct{ OK bool }
		in.tool("notify", map[string]string{"message": "done"}, &ok)
		if !ok.OK || !reflect.DeepEqual(in.host.sent, []sentMessage{{"notify", "done"}}) {
			t.Errorf("notify: ok=%v sent=%+v", ok.OK, in.host.sent)
		}
	})

	// Nothing granted: every capability is denied, and the tools say so.
	denied := []struct{ tool, input, want string }{
		{"put", `{"key":"k","value":"v"}`, `sdk: handle: capability denied`},
		{"get", `{"key":"k"}`, `sdk: handle: capability denied`},
		{"list", `{}`, `sdk: handle: capability denied`},
		{"sign", `{"message":"m"}`, `sdk: handle "signing_key": capability denied`},
		{"notify", `{"message":"m"}`, `sdk: handle "notify": capability denied`},
	}
	for _, tt := range denied {
		t.Run("denied/"+tt.tool, func(t *testing.T) {
			t.Parallel()
			in := instantiate(t, "gokv", mod, newFakeHost())
			b, err := in.call(tt.tool, []byte(tt.input))
			if err != nil {
				t.Fatal(err)
			}
			var e errorOutput
			if err := json.Unmarshal(b, &e); err != nil || e.Error != tt.want {
				t.Errorf("%s = %s, want error %q", tt.tool, b, tt.want)
			}
		})
	}
}
