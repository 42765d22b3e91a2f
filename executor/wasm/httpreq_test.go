package wasm

import (
	"bytes"
	"encoding/json"
	"testing"
)

// httpRequestCases seed TestParseHTTPRequest and FuzzHTTPRequest.
var httpRequestCases = []struct {
	in   string
	host string // "" when refused
}{
	{`{"method":"GET","url":"https://api.example.com/"}`, "api.example.com"},
	{`{"method":"GET","url":"http://api.example.com"}`, "api.example.com"},
	{`{"method":"POST","url":"https://api.example.com:8443/a?b=c","headers":{"X-A":"1"},"body":"aGk="}`, "api.example.com"},
	{`{"method":"GET","url":"https://[2001:db8::1]/"}`, "2001:db8::1"},
	{`{"method":"GET","url":"https://10.0.0.1/","headers":{}}`, "10.0.0.1"},
	{`{"method":"GET","url":"https://a.example/","url":"https://b.example/"}`, ""},
	{`{"method":"GET","url":"https://a.example/","extra":1}`, ""},
	{`{"method":"GET","url":"https://a.example/"} {}`, ""},
	{`{"method":"GET","url":"https://a.example/"}x`, ""},
	{`[{"method":"GET","url":"https://a.example/"}]`, ""},
	{`{"method":"get","url":"https://a.example/"}`, ""},
	{`{"method":"CONNECT","url":"https://a.example/"}`, ""},
	{`{"method":"GET","url":"ftp://a.example/"}`, ""},
	{`{"method":"GET","url":"https://user:pw@a.example/"}`, ""},
	{`{"method":"GET","url":"https://A.example/"}`, ""},
	{`{"method":"GET","url":"https://a.example/#frag"}`, ""},
	{`{"method":"GET","url":"https://a%2eexample/"}`, ""},
	{`{"method":"GET","url":"https://a.example:99999/"}`, ""},
	{`{"method":"GET","url":"https://a.example:0/"}`, ""},
	{`{"method":"GET","url":"//a.example/"}`, ""},
	{`{"method":"GET","url":"https://a.example/ x"}`, ""},
	{`{"method":"GET","url":"https://a.example/","headers":{"Host":"b.example"}}`, ""},
	{`{"method":"GET","url":"https://a.example/","headers":{"Transfer-Encoding":"chunked"}}`, ""},
	{`{"method":"GET","url":"https://a.example/","headers":{"Proxy-Foo":"x"}}`, ""},
	{`{"method":"GET","url":"https://a.example/","headers":{"X-A":"1","x-a":"2"}}`, ""},
	{`{"method":"GET","url":"https://a.example/","headers":{"X-A":"a\r\nHost: b"}}`, ""},
	{`{"method":"GET","url":"https://a.example/","headers":{"X A":"1"}}`, ""},
	{`{"method":"GET","url":"https://a.example/","headers":{"X-A":1}}`, ""},
	{`{"method":"GET","url":"https://a.example/","body":"aGk"}`, ""},
	{`{"method":"GET","url":"https://a.example/","body":"a Gk="}`, ""},
	{`{"method":"GET","url":"https://a.example/","body":null}`, ""},
	{"{\"method\":\"GET\",\"url\":\"https://a.example/\xff\"}", ""},
	{`{"method":"GET"}`, ""},
	{``, ""},
}

func TestParseHTTPRequest(t *testing.T) {
	for _, tc := range httpRequestCases {
		req, err := parseHTTPRequest([]byte(tc.in))
		switch {
		case tc.host == "" && err == nil:
			t.Errorf("%s: accepted, host %q", tc.in, req.host)
		case tc.host != "" && err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case tc.host != "" && req.host != tc.host:
			t.Errorf("%s: host %q, want %q", tc.in, req.host, tc.host)
		}
	}
}

// FuzzHTTPRequest: the parser never panics, and what it accepts it
// re-encodes canonically: parsing the canonical form gives it back, with
// the same host. Seeds: httpRequestCases and testdata/fuzz/FuzzHTTPRequest.
func FuzzHTTPRequest(f *testing.F) {
	for _, tc := range httpRequestCases {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		req, err := parseHTTPRequest(in)
		if err != nil {
			return
		}
		// The canonical form lists each header's value, as the broker
		// wants; back in the guest's shape it must parse to itself.
		var c canonicalRequest
		if err := json.Unmarshal(req.canonical, &c); err != nil {
			t.Fatalf("canonical form %s: %v", req.canonical, err)
		}
		guest := map[string]any{"method": c.Method, "url": c.URL}
		if c.Body != "" {
			guest["body"] = c.Body
		}
		if len(c.Headers) > 0 {
			h := map[string]string{}
			for k, v := range c.Headers {
				if len(v) != 1 {
					t.Fatalf("header %q with %d values", k, len(v))
				}
				h[k] = v[0]
			}
			guest["headers"] = h
		}
		back, _ := json.Marshal(guest)
		again, err := parseHTTPRequest(back)
		if err != nil {
			t.Fatalf("canonical form %s refused: %v", req.canonical, err)
		}
		if again.host != req.host || !bytes.Equal(again.canonical, req.canonical) {
			t.Fatalf("canonical form %s not stable: %s", req.canonical, again.canonical)
		}
	})
}
