package hostcall

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"syscall"
	"time"

	"github.com/stockade-dev/stockade/policy"
)

// Resolver looks up a host name's addresses. *net.Resolver is one; tests
// give another.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Defaults of HTTP's limits.
const (
	DefaultMaxRequestBody  = 1 << 20
	DefaultMaxResponseBody = 4 << 20
	DefaultHTTPTimeout     = 30 * time.Second
)

// Fixed limits of HTTP.
const (
	maxRedirects      = 3        // same-origin redirects followed
	maxAddrs          = 16       // addresses accepted from one lookup
	maxResponseHeader = 64 << 10 // response header bytes
	dialTimeout       = 10 * time.Second
)

// HTTP performs http_request for guests. The zero HTTP is ready to use,
// with the defaults above, the system resolver and the system roots; it
// holds no connection between calls and is safe for concurrent use.
//
// What Do does, in order:
//
//  1. decode the request strictly (ErrInvalid);
//  2. find the grant's entries for the URL's host and port (ErrDenied);
//  3. resolve the name once, through Resolver (an IP literal is not
//     resolved), and check every address against the entries: some entry
//     must permit all of them (ErrDenied; see HostGrant);
//  4. send the request over a connection to one of exactly those
//     addresses: the transport's dialler refuses any other target and
//     checks the socket's address before connecting; TLS is verified
//     against RootCAs with the host as server name (SNI, unless an IP);
//     HTTP/1.1, no proxy (the environment is ignored), no cookie jar, no
//     compression negotiated by the broker, no connection reuse;
//  5. follow a redirect only to the same scheme, host and port, at most
//     three times (the Location is checked as in step 2 and dialled at the
//     addresses of step 3); a redirect anywhere else is ErrDenied, and a
//     fourth same-origin redirect is returned to the guest as it is;
//  6. read the response body up to MaxResponseBody (ErrQuota beyond).
//
// Steps 3 to 6 run under Timeout in all; a failure there is
// ErrUnavailable, also wrapping the context's error when the call's
// context or the time cap ended it.
type HTTP struct {
	// Resolver looks names up; nil means net.DefaultResolver.
	Resolver Resolver
	// RootCAs verifies servers; nil means the system's roots.
	RootCAs *x509.CertPool
	// MaxRequestBody caps the decoded request body; 0 means
	// DefaultMaxRequestBody.
	MaxRequestBody int
	// MaxResponseBody caps the response body; 0 means
	// DefaultMaxResponseBody.
	MaxResponseBody int
	// Timeout caps resolution, connection, request and response
	// together; 0 means DefaultHTTPTimeout.
	Timeout time.Duration
}

func (h *HTTP) maxRequestBody() int  { return orDefault(h.MaxRequestBody, DefaultMaxRequestBody) }
func (h *HTTP) maxResponseBody() int { return orDefault(h.MaxResponseBody, DefaultMaxResponseBody) }
func (h *HTTP) timeout() time.Duration {
	return orDefault(h.Timeout, DefaultHTTPTimeout)
}

func orDefault[T int | time.Duration](v, d T) T {
	if v <= 0 {
		return d
	}
	return v
}

// Do performs one http_request: request is the guest's JSON, grant the
// call's. It returns the response JSON, or an error wrapping one of
// ErrInvalid, ErrDenied, ErrUnavailable or ErrQuota.
func (h *HTTP) Do(ctx context.Context, grant Grant, request []byte) ([]byte, error) {
	req, err := decodeRequest(request, h.maxRequestBody())
	if err != nil {
		return nil, err
	}
	entries := grant.entriesFor(req.host, req.port)
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: %s is not granted", ErrDenied, dialAddr(req.host, req.port))
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	addrs, err := h.resolve(ctx, req.host)
	if err != nil {
		return nil, err
	}
	if err := checkAddrs(entries, req.host, addrs); err != nil {
		return nil, err
	}
	t := &target{addr: dialAddr(req.host, req.port), host: req.host, port: req.port, addrs: addrs}
	tr := h.transport(t)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, CheckRedirect: t.checkRedirect(req.url.Scheme)}

	hreq, err := http.NewRequestWithContext(ctx, req.method, req.url.String(), bytes.NewReader(req.body))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	hreq.Header = req.header
	resp, err := client.Do(hreq)
	if err != nil {
		// *url.Error prints the URL, whose query or path may hold a
		// secret the guest put there: keep the operation and the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = fmt.Errorf("%s %s: %w", ue.Op, origin(req.url), ue.Err)
		}
		if errors.Is(err, ErrDenied) {
			return nil, err
		}
		return nil, unavailable(ctx, err)
	}
	defer resp.Body.Close()
	max := h.maxResponseBody()
	if resp.ContentLength > int64(max) {
		return nil, fmt.Errorf("%w: response body of %d bytes, over %d", ErrQuota, resp.ContentLength, max)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(max)+1))
	if err != nil {
		return nil, unavailable(ctx, err)
	}
	if len(body) > max {
		return nil, fmt.Errorf("%w: response body over %d bytes", ErrQuota, max)
	}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	out, err := json.Marshal(response{Status: resp.StatusCode, Header: resp.Header, Body: body})
	if err != nil {
		return nil, fmt.Errorf("%w: encoding the response: %v", ErrUnavailable, err)
	}
	return out, nil
}

// unavailable classes a network error, keeping the context's error when
// the context ended the call.
func unavailable(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w: %v", ErrUnavailable, cerr, err)
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// resolve returns the host's addresses: the literal itself, or the
// lookup's answer (unmapped, without duplicates).
func (h *HTTP) resolve(ctx context.Context, host policy.Host) ([]netip.Addr, error) {
	if host.IsIP() {
		a, err := netip.ParseAddr(host.String())
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		return []netip.Addr{a}, nil
	}
	var r Resolver = net.DefaultResolver
	if h.Resolver != nil {
		r = h.Resolver
	}
	found, err := r.LookupNetIP(ctx, "ip", host.String())
	if err != nil {
		return nil, unavailable(ctx, fmt.Errorf("resolving %s: %w", host, err))
	}
	var addrs []netip.Addr
	for _, a := range found {
		a = a.Unmap()
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: %s has no address", ErrUnavailable, host)
	}
	if len(addrs) > maxAddrs {
		return nil, fmt.Errorf("%w: %s has %d addresses, over %d", ErrUnavailable, host, len(addrs), maxAddrs)
	}
	return addrs, nil
}

// checkAddrs passes when one entry permits every address. A name that
// resolves to a public and a private address is refused whole: that is
// how DNS rebinding looks.
func checkAddrs(entries []HostGrant, host policy.Host, addrs []netip.Addr) error {
	var refused netip.Addr
	var class addrClass
	for _, e := range entries {
		ok := true
		for _, a := range addrs {
			if p, c := e.permits(a); !p {
				ok, refused, class = false, a, c
				break
			}
		}
		if ok {
			return nil
		}
	}
	return fmt.Errorf("%w: %s: address %s (%s) is not permitted by the grant", ErrDenied, host, refused, class)
}

// target is the one destination a call may connect to, and the addresses
// it was checked at.
type target struct {
	addr  string // host:port as the transport asks for it
	host  policy.Host
	port  uint16
	addrs []netip.Addr
}

func (h *HTTP) transport(t *target) *http.Transport {
	return &http.Transport{
		Proxy:       nil,
		DialContext: t.dial,
		TLSClientConfig: &tls.Config{
			RootCAs:    h.RootCAs,
			MinVersion: tls.VersionTLS12,
		},
		TLSHandshakeTimeout:    dialTimeout,
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: maxResponseHeader,
		ForceAttemptHTTP2:      false,
	}
}

// dial connects to one of the checked addresses, in the resolver's order.
// The transport may only ask for the checked host and port.
func (t *target) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if addr != t.addr || (network != "tcp" && network != "tcp4" && network != "tcp6") {
		return nil, fmt.Errorf("%w: dial %s %s, not the checked %s", ErrDenied, network, addr, t.addr)
	}
	d := net.Dialer{Timeout: dialTimeout, KeepAlive: -1, Control: t.control}
	var errs []error
	for _, a := range t.addrs {
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, t.port).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// control checks the socket's destination before connect: a second lock
// on the door that dial already keeps.
func (t *target) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || ap.Port() != t.port || !slices.Contains(t.addrs, ap.Addr().Unmap()) {
		return fmt.Errorf("%w: connect to %s, not a checked address", ErrDenied, address)
	}
	return nil
}

// checkRedirect follows a redirect only to the same scheme, host and port
// (rewriting the host in canonical form, so that the dialler sees the
// checked address), and returns the fourth such redirect to the guest.
func (t *target) checkRedirect(scheme string) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		u := req.URL
		if u.Scheme != scheme || u.User != nil {
			return fmt.Errorf("%w: redirect to another origin (%s)", ErrDenied, origin(u))
		}
		h, err := policy.ParseHost(u.Hostname())
		if err != nil || h != t.host {
			return fmt.Errorf("%w: redirect to another host (%s)", ErrDenied, origin(u))
		}
		def := uint16(80)
		if scheme == "https" {
			def = 443
		}
		port := def
		if p := u.Port(); p != "" {
			if port, err = parsePort(p); err != nil {
				return fmt.Errorf("%w: redirect: %v", ErrDenied, err)
			}
		}
		if port != t.port {
			return fmt.Errorf("%w: redirect to another port (%s)", ErrDenied, origin(u))
		}
		if len(via) > maxRedirects {
			return http.ErrUseLastResponse
		}
		u.Host = urlHost(h, port, def)
		req.Host = ""
		return nil
	}
}

// origin is what errors say of a URL: scheme and host, without userinfo,
// path or query, which may carry secrets.
func origin(u *url.URL) string { return u.Scheme + "://" + u.Host }
