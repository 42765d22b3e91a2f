package hostcall

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResolver answers from a table and counts lookups.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]string
	lookups map[string]int
}

func newResolver(answers map[string][]string) *fakeResolver {
	return &fakeResolver{answers: answers, lookups: map[string]int{}}
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups[host]++
	ss, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[host]
}

var _ Resolver = (*fakeResolver)(nil)

// testServer is an httptest server on loopback that counts requests and
// records the last Host header and Cookie header it saw.
type testServer struct {
	*httptest.Server
	hits                      atomic.Int64
	mu                        sync.Mutex
	lastHost, lastCookie, sni string
}

func newTestServer(t *testing.T, tls bool, h http.HandlerFunc) *testServer {
	t.Helper()
	s := &testServer{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		s.lastHost, s.lastCookie = r.Host, r.Header.Get("Cookie")
		if r.TLS != nil {
			s.sni = r.TLS.ServerName
		}
		s.mu.Unlock()
		h(w, r)
	})
	s.Server = httptest.NewUnstartedServer(handler)
	// Refused handshakes are expected; keep them out of the test log.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *testServer) port() uint16 {
	return uint16(s.Listener.Addr().(*net.TCPAddr).Port)
}

func (s *testServer) seen() (host, cookie, sni string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastHost, s.lastCookie, s.sni
}

func hello(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Reply", "yes")
	body, _ := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%s %s %s body=%s", r.Method, r.URL.RequestURI(), r.Header.Get("X-Test"), body)
}

func getJSON(url string) []byte {
	return []byte(`{"method":"GET","url":"` + url + `"}`)
}

type testResponse struct {
	Status  int         `json:"status"`
	Headers http.Header `json:"headers"`
	Body    []byte      `json:"body"`
}

func decodeResponse(t *testing.T, b []byte) testResponse {
	t.Helper()
	var r testResponse
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		t.Fatalf("response %s: %v", b, err)
	}
	return r
}

func grantOf(hosts ...HostGrant) Grant { return Grant{HTTP: hosts} }

func TestHTTPGrantedLoopbackServer(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, false, hello)
	h := &HTTP{Resolver: newResolver(nil)}
	grant := grantOf(hg(t, "127.0.0.1", false, srv.port()))
	req := fmt.Sprintf(`{"method":"POST","url":"%s/echo?x=1","headers":{"X-Test":["t1"]},"body":"aGVsbG8="}`, srv.URL)
	out, err := h.Do(context.Background(), grant, []byte(req))
	if err != nil {
		t.Fatal(err)
	}
	r := decodeResponse(t, out)
	if r.Status != 200 || string(r.Body) != "POST /echo?x=1 t1 body=hello" || r.Headers.Get("X-Reply") != "yes" {
		t.Fatalf("response %+v (%s)", r, r.Body)
	}
	if host, _, _ := srv.seen(); host != srv.Listener.Addr().String() {
		t.Fatalf("the server saw Host %q", host)
	}
}

func TestHTTPDenied(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, false, hello)
	port := srv.port()
	p := strconv.Itoa(int(port))
	res := newResolver(map[string][]string{
		"localhost":        {"127.0.0.1", "::1"},
		"api.example.com":  {"127.0.0.1"},
		"mixed.example":    {"93.184.215.14", "127.0.0.1"},
		"metadata.example": {"169.254.169.254"},
		"ula.example":      {"fd12::1"},
	})
	h := &HTTP{Resolver: res, Timeout: 5 * time.Second}
	tests := []struct {
		name  string
		grant Grant
		url   string
	}{
		{"the server not named", Grant{}, srv.URL},
		{"the server not named, other hosts are", grantOf(hg(t, "api.example.com", true, port)), "http://127.0.0.1:" + p},
		{"another port of the granted host", grantOf(hg(t, "127.0.0.1", false, port+1)), srv.URL},
		{"default ports only", grantOf(hg(t, "127.0.0.1", false)), srv.URL},
		{"127.0.0.1 by name, the IP granted", grantOf(hg(t, "127.0.0.1", false, port)), "http://localhost:" + p},
		{"127.0.0.1 by name, granted without private", grantOf(hg(t, "localhost", false, port)), "http://localhost:" + p},
		{"127.0.0.1 by IP, the name granted", grantOf(hg(t, "localhost", true, port)), "http://127.0.0.1:" + p},
		{"::1 by IP, 127.0.0.1 granted", grantOf(hg(t, "127.0.0.1", false, port)), "http://[::1]:" + p},
		{"ipv4-mapped loopback, not granted", grantOf(hg(t, "api.example.com", true, port)), "http://[::ffff:127.0.0.1]:" + p},
		{"a public-looking name resolving to loopback", grantOf(hg(t, "api.example.com", false, port)), "http://api.example.com:" + p},
		{"a name resolving to public and loopback", grantOf(hg(t, "mixed.example", false, port)), "http://mixed.example:" + p},
		{"a name resolving to ULA", grantOf(hg(t, "ula.example", false, port)), "http://ula.example:" + p},
		{"a name resolving to metadata, private allowed", grantOf(hg(t, "metadata.example", true, AnyPort)), "http://metadata.example/"},
		{"0.0.0.0 granted", grantOf(hg(t, "0.0.0.0", true, port)), "http://0.0.0.0:" + p},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := h.Do(context.Background(), tt.grant, getJSON(tt.url))
			if !errors.Is(err, ErrDenied) {
				t.Fatalf("Do = %s, %v; want ErrDenied", out, err)
			}
			t.Log(err)
		})
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("the server was reached %d times", n)
	}
}

// TestHTTPPrivateByName: a name the grant allows to be private reaches
// the loopback server at the address the resolver gave, resolved once,
// and the server sees the name.
func TestHTTPPrivateByName(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, false, hello)
	p := strconv.Itoa(int(srv.port()))
	res := newResolver(map[string][]string{"api.example.com": {"127.0.0.1"}})
	h := &HTTP{Resolver: res}
	out, err := h.Do(context.Background(), grantOf(hg(t, "api.example.com", true, srv.port())), getJSON("http://API.example.com.:"+p+"/x"))
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeResponse(t, out); r.Status != 200 {
		t.Fatalf("status %d", r.Status)
	}
	if host, _, _ := srv.seen(); host != "api.example.com:"+p {
		t.Fatalf("Host %q", host)
	}
	if n := res.count("api.example.com"); n != 1 {
		t.Fatalf("%d lookups, want 1", n)
	}
}

// TestHTTPLocalhostSystemResolver: "localhost" through the system's
// resolver, granted with AllowPrivate, reaches the server; without it,
// it is refused.
func TestHTTPLocalhostSystemResolver(t *testing.T) {
	t.Parallel()
	addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", "localhost")
	if err != nil || len(addrs) == 0 {
		t.Skipf("localhost does not resolve here: %v", err)
	}
	for _, a := range addrs {
		if !a.Unmap().IsLoopback() {
			t.Skipf("localhost resolves to %v here", addrs)
		}
	}
	srv := newTestServer(t, false, hello)
	p := strconv.Itoa(int(srv.port()))
	// The server listens on 127.0.0.1 only; if ::1 comes first, its dial
	// fails and the next checked address is tried.
	sys := &HTTP{}
	if _, err := sys.Do(context.Background(), grantOf(hg(t, "localhost", true, srv.port())), getJSON("http://localhost:"+p)); err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Do(context.Background(), grantOf(hg(t, "localhost", false, srv.port())), getJSON("http://localhost:"+p)); !errors.Is(err, ErrDenied) {
		t.Fatalf("system resolver, no AllowPrivate: %v, want ErrDenied", err)
	}
}

func TestHTTPRedirects(t *testing.T) {
	t.Parallel()
	other := newTestServer(t, false, hello)
	var srv *testServer
	srv = newTestServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		p := strconv.Itoa(int(srv.port()))
		switch r.URL.Path {
		case "/to-other-server":
			http.Redirect(w, r, other.URL+"/stolen", http.StatusFound)
		case "/to-other-name":
			http.Redirect(w, r, "http://localhost:"+p+"/final", http.StatusFound)
		case "/to-https":
			http.Redirect(w, r, "https://127.0.0.1:"+p+"/final", http.StatusFound)
		case "/to-userinfo":
			http.Redirect(w, r, "http://u:p@127.0.0.1:"+p+"/final", http.StatusFound)
		case "/same":
			http.SetCookie(w, &http.Cookie{Name: "c", Value: "1", Path: "/"})
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/post":
			http.Redirect(w, r, "/final", http.StatusTemporaryRedirect)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		default:
			hello(w, r)
		}
	})
	h := &HTTP{Resolver: newResolver(map[string][]string{"localhost": {"127.0.0.1"}})}
	// Both servers and the other name are granted: a redirect leaves the
	// origin all the same.
	grant := grantOf(hg(t, "127.0.0.1", true, srv.port(), other.port()), hg(t, "localhost", true, AnyPort))
	for _, path := range []string{"/to-other-server", "/to-other-name", "/to-https", "/to-userinfo"} {
		if out, err := h.Do(context.Background(), grant, getJSON(srv.URL+path)); !errors.Is(err, ErrDenied) {
			t.Errorf("%s: %s, %v; want ErrDenied", path, out, err)
		}
	}
	if n := other.hits.Load(); n != 0 {
		t.Fatalf("the other server was reached %d times", n)
	}

	out, err := h.Do(context.Background(), grant, getJSON(srv.URL+"/same"))
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeResponse(t, out); r.Status != 200 || string(r.Body) != "GET /final  body=" {
		t.Fatalf("same-origin redirect: %d %q", r.Status, r.Body)
	}
	if _, cookie, _ := srv.seen(); cookie != "" {
		t.Fatalf("a cookie was kept: %q", cookie)
	}

	out, err = h.Do(context.Background(), grant, []byte(`{"method":"POST","url":"`+srv.URL+`/post","body":"eA=="}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeResponse(t, out); r.Status != 200 || string(r.Body) != "POST /final  body=x" {
		t.Fatalf("307: %d %q", r.Status, r.Body)
	}

	before := srv.hits.Load()
	out, err = h.Do(context.Background(), grant, getJSON(srv.URL+"/loop"))
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeResponse(t, out); r.Status != http.StatusFound || r.Headers.Get("Location") != "/loop" {
		t.Fatalf("redirect loop: %d %v", r.Status, r.Headers)
	}
	if n := srv.hits.Load() - before; n != 1+maxRedirects {
		t.Fatalf("redirect loop: %d requests, want %d", n, 1+maxRedirects)
	}
}

func TestHTTPResponseQuota(t *testing.T) {
	t.Parallel()
	const max = 1000
	srv := newTestServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Query().Has("chunked") {
			// Flushing first leaves the length unknown.
			w.(http.Flusher).Flush()
			for range n {
				w.Write([]byte{'x'})
			}
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Write(bytes.Repeat([]byte{'x'}, n))
	})
	h := &HTTP{MaxResponseBody: max}
	grant := grantOf(hg(t, "127.0.0.1", false, srv.port()))
	tests := []struct {
		query string
		quota bool
	}{
		{"n=1000", false},
		{"n=1001", true},
		{"n=1000&chunked", false},
		{"n=1001&chunked", true},
		{"n=100000&chunked", true},
	}
	for _, tt := range tests {
		out, err := h.Do(context.Background(), grant, getJSON(srv.URL+"/?"+tt.query))
		switch {
		case tt.quota && !errors.Is(err, ErrQuota):
			t.Errorf("%s: %v, want ErrQuota", tt.query, err)
		case !tt.quota && err != nil:
			t.Errorf("%s: %v", tt.query, err)
		case !tt.quota && len(decodeResponse(t, out).Body) != max:
			t.Errorf("%s: a short body", tt.query)
		}
	}
}

func TestHTTPTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newTestServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	h := &HTTP{Timeout: 200 * time.Millisecond}
	_, err := h.Do(context.Background(), grantOf(hg(t, "127.0.0.1", false, srv.port())), getJSON(srv.URL))
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do = %v; want ErrUnavailable and DeadlineExceeded", err)
	}
	// The call's own context counts too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (&HTTP{}).Do(ctx, grantOf(hg(t, "127.0.0.1", false, srv.port())), getJSON(srv.URL)); !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with a done context = %v", err)
	}
}

func TestHTTPTLS(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, true, hello)
	p := strconv.Itoa(int(srv.port()))
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	// httptest's certificate names example.com, 127.0.0.1 and ::1.
	res := newResolver(map[string][]string{"example.com": {"127.0.0.1"}, "other.example": {"127.0.0.1"}})
	h := &HTTP{Resolver: res, RootCAs: roots}

	out, err := h.Do(context.Background(), grantOf(hg(t, "example.com", true, srv.port())), getJSON("https://example.com:"+p+"/tls"))
	if err != nil {
		t.Fatal(err)
	}
	if r := decodeResponse(t, out); r.Status != 200 {
		t.Fatalf("status %d", r.Status)
	}
	if _, _, sni := srv.seen(); sni != "example.com" {
		t.Fatalf("SNI %q, want example.com", sni)
	}
	if _, err := h.Do(context.Background(), grantOf(hg(t, "127.0.0.1", false, srv.port())), getJSON("https://127.0.0.1:"+p+"/")); err != nil {
		t.Fatalf("an IP SAN: %v", err)
	}

	// A name the certificate does not carry, and a root not trusted.
	if _, err := h.Do(context.Background(), grantOf(hg(t, "other.example", true, srv.port())), getJSON("https://other.example:"+p+"/")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a certificate for another name: %v, want ErrUnavailable", err)
	}
	sys := &HTTP{Resolver: res}
	if _, err := sys.Do(context.Background(), grantOf(hg(t, "example.com", true, srv.port())), getJSON("https://example.com:"+p+"/")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("an untrusted root: %v, want ErrUnavailable", err)
	}
}

// TestHTTPIgnoresProxyEnvironment: with a proxy in the environment that
// would fail every request, a granted name still reaches the server.
// (Go never proxies loopback IP literals, so the request uses a name.)
func TestHTTPIgnoresProxyEnvironment(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("http_proxy", "http://127.0.0.1:1")
	t.Setenv("NO_PROXY", "")
	srv := newTestServer(t, false, hello)
	h := &HTTP{Resolver: newResolver(map[string][]string{"api.example.com": {"127.0.0.1"}})}
	url := "http://api.example.com:" + strconv.Itoa(int(srv.port())) + "/"
	if _, err := h.Do(context.Background(), grantOf(hg(t, "api.example.com", true, srv.port())), getJSON(url)); err != nil {
		t.Fatal(err)
	}
	if tr := h.transport(&target{}); tr.Proxy != nil || tr.TLSClientConfig.InsecureSkipVerify {
		t.Fatal("the transport has a proxy or skips verification")
	}
}

// TestHTTPDialsOnlyTheCheckedAddress attacks the dialler directly: a
// request for another address, and a socket to another address, are
// refused.
func TestHTTPDialsOnlyTheCheckedAddress(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, false, hello)
	tg := &target{addr: "api.example.com:443", host: host(t, "api.example.com"), port: 443,
		addrs: []netip.Addr{netip.MustParseAddr("93.184.215.14")}}
	if _, err := tg.dial(context.Background(), "tcp", srv.Listener.Addr().String()); !errors.Is(err, ErrDenied) {
		t.Fatalf("dial of another address: %v", err)
	}
	if _, err := tg.dial(context.Background(), "unix", "api.example.com:443"); !errors.Is(err, ErrDenied) {
		t.Fatalf("dial of another network: %v", err)
	}
	if err := tg.control("tcp4", srv.Listener.Addr().String(), nil); !errors.Is(err, ErrDenied) {
		t.Fatalf("connect to another address: %v", err)
	}
	if err := tg.control("tcp4", "93.184.215.14:443", nil); err != nil {
		t.Fatalf("connect to the checked address: %v", err)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("the server was reached %d times", n)
	}
}

func TestHTTPInvalidAndUnavailable(t *testing.T) {
	t.Parallel()
	res := newResolver(map[string][]string{"nowhere.example": {}})
	h := &HTTP{Resolver: res, MaxRequestBody: 4}
	grant := grantOf(hg(t, "api.example.com", true, AnyPort), hg(t, "nowhere.example", true, AnyPort), hg(t, "gone.example", true, AnyPort), hg(t, "127.0.0.1", false, AnyPort))
	for _, req := range []string{
		`{"method":"GET","url":"http://api.example.com/","url":"http://x/"}`,
		`{"method":"POST","url":"http://api.example.com/","body":"aGVsbG8="}`, // 5 bytes, over 4
		`{"method":"GET","url":"http://api.example.com/","headers":{"Host":["x"]}}`,
	} {
		if _, err := h.Do(context.Background(), grant, []byte(req)); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", req, err)
		}
	}
	if n := res.count("api.example.com"); n != 0 {
		t.Fatalf("a malformed request was resolved %d times", n)
	}
	// No such name, no address, nothing listening.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	for _, url := range []string{"http://gone.example/", "http://nowhere.example/", "http://" + closed + "/"} {
		if _, err := h.Do(context.Background(), grant, getJSON(url)); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v, want ErrUnavailable", url, err)
		}
	}
	if !strings.HasPrefix(closed, "127.0.0.1:") {
		t.Fatal(closed)
	}
}

// TestHTTPErrorsHideURLs: a guest may put a secret in a URL's path or
// query; error texts (which go to the broker's log) name the origin only.
func TestHTTPErrorsHideURLs(t *testing.T) {
	t.Parallel()
	const secret = "sk-IN-THE-URL-42"
	srv := newTestServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.example/"+secret+"?k="+secret, http.StatusFound)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	h := &HTTP{}
	grant := grantOf(hg(t, "127.0.0.1", false, AnyPort))
	for _, req := range []string{
		`{"method":"GET","url":"http://` + closed + `/` + secret + `?key=` + secret + `"}`,
		`{"method":"GET","url":"` + srv.URL + `/` + secret + `?key=` + secret + `"}`,
		`{"method":"GET","url":"http://127.0.0.1:99999/` + secret + `"}`,
		`{"method":"GET","url":"http://127.0.0.1/%zz` + secret + `"}`,
	} {
		_, err := h.Do(context.Background(), grant, []byte(req))
		if err == nil {
			t.Fatalf("%s: no error", req)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the URL: %v", err)
		}
	}
}
