package hostcall

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const testMaxBody = 1024

// decodeTests seed FuzzDecodeRequest too.
var decodeTests = []struct {
	name string
	in   string
	// For a request that decodes: its URL as sent, host:port dialled.
	url, addr string
}{
	{name: "minimal", in: `{"method":"GET","url":"http://api.example.com/"}`, url: "http://api.example.com/", addr: "api.example.com:80"},
	{name: "all fields", in: `{"method":"POST","url":"https://API.Example.com.:8443/a/b?q=1#frag","headers":{"content-type":["application/json"],"X-Multi":["a","b"]},"body":"aGVsbG8="}`,
		url: "https://api.example.com:8443/a/b?q=1", addr: "api.example.com:8443"},
	{name: "default port written", in: `{"method":"GET","url":"https://h.example:443/"}`, url: "https://h.example/", addr: "h.example:443"},
	{name: "leading zero port", in: `{"method":"GET","url":"http://h.example:0080/"}`, url: "http://h.example/", addr: "h.example:80"},
	{name: "ipv4", in: `{"method":"GET","url":"http://127.0.0.1:8080/x"}`, url: "http://127.0.0.1:8080/x", addr: "127.0.0.1:8080"},
	{name: "ipv6", in: `{"method":"GET","url":"http://[::1]/x"}`, url: "http://[::1]/x", addr: "[::1]:80"},
	{name: "ipv4-mapped ipv6", in: `{"method":"GET","url":"http://[::ffff:127.0.0.1]:81/"}`, url: "http://127.0.0.1:81/", addr: "127.0.0.1:81"},
	{name: "keys in any order, empty body and headers", in: ` {"body":"","headers":{},"url":"http://h.example","method":"DELETE"} `, url: "http://h.example", addr: "h.example:80"},
	{name: "escaped key", in: `{"metho\u0064":"GET","url":"http://h.example/"}`, url: "http://h.example/", addr: "h.example:80"},

	{name: "not JSON", in: `GET / HTTP/1.1`},
	{name: "empty", in: ``},
	{name: "array", in: `[]`},
	{name: "null", in: `null`},
	{name: "unknown key", in: `{"method":"GET","url":"http://h.example/","timeout":5}`},
	{name: "key in another case", in: `{"Method":"GET","url":"http://h.example/"}`},
	{name: "duplicate key", in: `{"method":"GET","url":"http://h.example/","url":"http://evil.example/"}`},
	{name: "duplicate key through an escape", in: `{"method":"GET","url":"http://h.example/","u\u0072l":"http://evil.example/"}`},
	{name: "trailing data", in: `{"method":"GET","url":"http://h.example/"} {}`},
	{name: "trailing garbage", in: `{"method":"GET","url":"http://h.example/"}x`},
	{name: "missing url", in: `{"method":"GET"}`},
	{name: "missing method", in: `{"url":"http://h.example/"}`},
	{name: "null method", in: `{"method":null,"url":"http://h.example/"}`},
	{name: "number method", in: `{"method":1,"url":"http://h.example/"}`},
	{name: "lower-case method", in: `{"method":"get","url":"http://h.example/"}`},
	{name: "CONNECT", in: `{"method":"CONNECT","url":"http://h.example/"}`},
	{name: "TRACE", in: `{"method":"TRACE","url":"http://h.example/"}`},
	{name: "invalid UTF-8", in: "{\"method\":\"GET\",\"url\":\"http://h.example/\xff\"}"},
	{name: "ftp", in: `{"method":"GET","url":"ftp://h.example/"}`},
	{name: "file", in: `{"method":"GET","url":"file:///etc/passwd"}`},
	{name: "no scheme", in: `{"method":"GET","url":"//h.example/"}`},
	{name: "opaque", in: `{"method":"GET","url":"http:h.example"}`},
	{name: "userinfo", in: `{"method":"GET","url":"http://user:pw@h.example/"}`},
	{name: "userinfo without password", in: `{"method":"GET","url":"http://h.example@evil.example/"}`},
	{name: "space in url", in: `{"method":"GET","url":"http://h.example/a b"}`},
	{name: "newline in url", in: `{"method":"GET","url":"http://h.example/\r\nX: y"}`},
	{name: "non-ASCII host", in: `{"method":"GET","url":"http://bücher.example/"}`},
	{name: "numeric host", in: `{"method":"GET","url":"http://2130706433/"}`},
	{name: "short IPv4", in: `{"method":"GET","url":"http://127.1/"}`},
	{name: "zone", in: `{"method":"GET","url":"http://[fe80::1%25eth0]/"}`},
	{name: "port 0", in: `{"method":"GET","url":"http://h.example:0/"}`},
	{name: "port out of range", in: `{"method":"GET","url":"http://h.example:65536/"}`},
	{name: "empty host", in: `{"method":"GET","url":"http:///x"}`},
	{name: "Host header", in: `{"method":"GET","url":"http://h.example/","headers":{"Host":["evil.example"]}}`},
	{name: "host header in lower case", in: `{"method":"GET","url":"http://h.example/","headers":{"host":["evil.example"]}}`},
	{name: "Connection", in: `{"method":"GET","url":"http://h.example/","headers":{"Connection":["close"]}}`},
	{name: "Transfer-Encoding", in: `{"method":"POST","url":"http://h.example/","headers":{"Transfer-Encoding":["chunked"]}}`},
	{name: "Content-Length", in: `{"method":"POST","url":"http://h.example/","headers":{"Content-Length":["5"]}}`},
	{name: "Upgrade", in: `{"method":"GET","url":"http://h.example/","headers":{"Upgrade":["websocket"]}}`},
	{name: "Proxy-Authorization", in: `{"method":"GET","url":"http://h.example/","headers":{"Proxy-Authorization":["x"]}}`},
	{name: "header twice in two cases", in: `{"method":"GET","url":"http://h.example/","headers":{"X-A":["1"],"x-a":["2"]}}`},
	{name: "header name with a space", in: `{"method":"GET","url":"http://h.example/","headers":{"X A":["1"]}}`},
	{name: "header name with a colon", in: `{"method":"GET","url":"http://h.example/","headers":{":authority":["evil.example"]}}`},
	{name: "header value with CRLF", in: `{"method":"GET","url":"http://h.example/","headers":{"X-A":["1\r\nHost: evil"]}}`},
	{name: "header value with NUL", in: `{"method":"GET","url":"http://h.example/","headers":{"X-A":["1\u0000"]}}`},
	{name: "header value a string", in: `{"method":"GET","url":"http://h.example/","headers":{"X-A":"1"}}`},
	{name: "header without values", in: `{"method":"GET","url":"http://h.example/","headers":{"X-A":[]}}`},
	{name: "headers null", in: `{"method":"GET","url":"http://h.example/","headers":null}`},
	{name: "body not base64", in: `{"method":"POST","url":"http://h.example/","body":"**"}`},
	{name: "body without padding", in: `{"method":"POST","url":"http://h.example/","body":"aGVsbG8"}`},
	{name: "body url-safe base64", in: `{"method":"POST","url":"http://h.example/","body":"-_-_"}`},
	{name: "body with a newline", in: `{"method":"POST","url":"http://h.example/","body":"aGVs\nbG8="}`},
	{name: "body over the cap", in: `{"method":"POST","url":"http://h.example/","body":"` + strings.Repeat("AAAA", testMaxBody/3+1) + `"}`},
	{name: "too many headers", in: `{"method":"GET","url":"http://h.example/","headers":{"X-A":[` + strings.Repeat(`"1",`, 64) + `"1"]}}`},
}

func TestDecodeRequest(t *testing.T) {
	t.Parallel()
	for _, tt := range decodeTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := decodeRequest([]byte(tt.in), testMaxBody)
			if tt.url == "" {
				if err == nil {
					t.Fatalf("decoded %+v, want an error", r)
				}
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("error %v is not ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.url.String(); got != tt.url {
				t.Errorf("url %q, want %q", got, tt.url)
			}
			if got := dialAddr(r.host, r.port); got != tt.addr {
				t.Errorf("dial address %q, want %q", got, tt.addr)
			}
		})
	}
}

func TestDecodeRequestFields(t *testing.T) {
	t.Parallel()
	r, err := decodeRequest([]byte(decodeTests[1].in), testMaxBody)
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{"Content-Type": {"application/json"}, "X-Multi": {"a", "b"}}
	if r.method != "POST" || string(r.body) != "hello" || !reflect.DeepEqual(r.header, want) {
		t.Fatalf("decoded %q %q %v", r.method, r.body, r.header)
	}
}

// encodeRequest is the guest's side: what an SDK sends.
func encodeRequest(r *request) []byte {
	b, err := json.Marshal(struct {
		Method  string      `json:"method"`
		URL     string      `json:"url"`
		Headers http.Header `json:"headers"`
		Body    []byte      `json:"body"`
	}{r.method, r.url.String(), r.header, r.body})
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzDecodeRequest: the decoder never panics; what it accepts is within
// its limits, names a host, and survives a round trip (encoding the
// decoded request and decoding it again gives the same request).
//
//	go test -run '^$' -fuzz FuzzDecodeRequest ./broker/hostcall/
func FuzzDecodeRequest(f *testing.F) {
	for _, tt := range decodeTests {
		f.Add([]byte(tt.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := decodeRequest(in, testMaxBody)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if !slices.Contains(methods, r.method) || len(r.body) > testMaxBody || r.host.IsZero() || r.port == 0 {
			t.Fatalf("accepted %+v", r)
		}
		if r.url.Scheme != "http" && r.url.Scheme != "https" || r.url.User != nil {
			t.Fatalf("accepted url %v", r.url)
		}
		for name := range r.header {
			if slices.Contains(refusedHeaders, http.CanonicalHeaderKey(name)) {
				t.Fatalf("accepted header %q", name)
			}
		}
		again, err := decodeRequest(encodeRequest(r), testMaxBody)
		if err != nil {
			t.Fatalf("the re-encoded request does not decode: %v", err)
		}
		if again.method != r.method || again.url.String() != r.url.String() || again.host != r.host ||
			again.port != r.port || !reflect.DeepEqual(again.header, r.header) || string(again.body) != string(r.body) {
			t.Fatalf("round trip: %+v, then %+v", r, again)
		}
	})
}
