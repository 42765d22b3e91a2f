package hostcall

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stockade-dev/stockade/policy"
)

// The http_request exchange (host ABI v1, executor/wasm):
//
//	guest ──http_request(h, req)──▶ executor ──(req, grant)──▶ broker: HTTP.Do
//	                                                             │ decode req strictly
//	                                                             │ host:port in grant?
//	                                                             │ resolve, check every address
//	                                                             │ dial the checked address
//	guest ◀──result_read── executor ◀──── response JSON ◀────────┘ or an error class
//
// The request, UTF-8 JSON, one object, no other keys, no key twice:
//
//	{
//	  "method":  "GET",                         required: GET HEAD POST PUT PATCH DELETE OPTIONS
//	  "url":     "https://api.example.com/v1?q=x",
//	                                            required: http or https, a host, no userinfo;
//	                                            printable ASCII; a fragment is dropped
//	  "headers": {"Accept": ["application/json"]},
//	                                            optional: name → values; names are HTTP
//	                                            tokens, compared case-insensitively; no
//	                                            hop-by-hop header, Host, Content-Length,
//	                                            Expect or Trailer
//	  "body":    "aGVsbG8="                     optional: standard base64 with padding
//	}
//
// The response:
//
//	{"status": 200, "headers": {"Content-Type": ["text/plain"]}, "body": "aGk="}
//
// headers are as the server sent them (canonical names); body is standard
// base64, always present ("" for none).

// Request limits. The body limit is HTTP.MaxRequestBody.
const (
	maxURLLen          = 8 << 10
	maxHeaderValues    = 64
	maxHeaderBytes     = 16 << 10 // names and values of the request's headers
	maxRequestOverhead = 32 << 10 // request JSON beyond the base64 body
)

// methods are the methods a guest may use.
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// refusedHeaders are headers the broker, not the guest, controls: the
// connection's (hop-by-hop), the target's (Host), the framing's.
var refusedHeaders = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
	"Host", "Content-Length", "Expect", "Http2-Settings",
}

// request is a decoded, checked http_request.
type request struct {
	method string
	url    *url.URL // canonical host, explicit port only when not the default
	host   policy.Host
	port   uint16
	header http.Header
	body   []byte
}

// response is the result of http_request.
type response struct {
	Status int         `json:"status"`
	Header http.Header `json:"headers"`
	Body   []byte      `json:"body"`
}

// decodeRequest reads an http_request argument strictly. Every error
// wraps ErrInvalid.
func decodeRequest(b []byte, maxBody int) (*request, error) {
	if len(b) > base64.StdEncoding.EncodedLen(maxBody)+maxRequestOverhead {
		return nil, fmt.Errorf("%w: request of %d bytes", ErrInvalid, len(b))
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("%w: request is not UTF-8", ErrInvalid)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := expectDelim(d, '{'); err != nil {
		return nil, err
	}
	var (
		r                     request
		rawURL, body          string
		seenMethod, seenURL   bool
		seenHeaders, seenBody bool
	)
	for d.More() {
		key, err := stringToken(d)
		if err != nil {
			return nil, err
		}
		var seen *bool
		switch key {
		case "method":
			seen = &seenMethod
		case "url":
			seen = &seenURL
		case "headers":
			seen = &seenHeaders
		case "body":
			seen = &seenBody
		default:
			return nil, fmt.Errorf("%w: unknown key %q", ErrInvalid, key)
		}
		if *seen {
			return nil, fmt.Errorf("%w: key %q twice", ErrInvalid, key)
		}
		*seen = true
		switch key {
		case "method":
			r.method, err = stringToken(d)
		case "url":
			rawURL, err = stringToken(d)
		case "headers":
			r.header, err = decodeHeaders(d)
		case "body":
			body, err = stringToken(d)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := expectDelim(d, '}'); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the request object", ErrInvalid)
	}
	if !seenMethod || !seenURL {
		return nil, fmt.Errorf("%w: method and url are required", ErrInvalid)
	}
	if !slices.Contains(methods, r.method) {
		return nil, fmt.Errorf("%w: method %q", ErrInvalid, r.method)
	}
	if err := r.parseURL(rawURL); err != nil {
		return nil, err
	}
	if r.header == nil {
		r.header = http.Header{}
	}
	if len(body) > base64.StdEncoding.EncodedLen(maxBody) {
		return nil, fmt.Errorf("%w: body over %d bytes", ErrInvalid, maxBody)
	}
	// Strict still skips CR and LF; a canonical encoding has none.
	if strings.ContainsAny(body, "\r\n") {
		return nil, fmt.Errorf("%w: body: a line break in base64", ErrInvalid)
	}
	var err error
	if r.body, err = base64.StdEncoding.Strict().DecodeString(body); err != nil {
		return nil, fmt.Errorf("%w: body: %v", ErrInvalid, err)
	}
	if len(r.body) > maxBody {
		return nil, fmt.Errorf("%w: body over %d bytes", ErrInvalid, maxBody)
	}
	return &r, nil
}

func expectDelim(d *json.Decoder, want json.Delim) error {
	t, err := d.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if t != want {
		return fmt.Errorf("%w: %v where %v belongs", ErrInvalid, t, want)
	}
	return nil
}

// stringToken reads a JSON string (not null, not another type).
func stringToken(d *json.Decoder) (string, error) {
	t, err := d.Token()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("%w: %v where a string belongs", ErrInvalid, t)
	}
	return s, nil
}

// decodeHeaders reads {"Name": ["value", ...], ...}.
func decodeHeaders(d *json.Decoder) (http.Header, error) {
	if err := expectDelim(d, '{'); err != nil {
		return nil, err
	}
	h := http.Header{}
	values, size := 0, 0
	for d.More() {
		name, err := stringToken(d)
		if err != nil {
			return nil, err
		}
		if !validHeaderName(name) {
			return nil, fmt.Errorf("%w: header name %q", ErrInvalid, name)
		}
		canon := http.CanonicalHeaderKey(name)
		if slices.Contains(refusedHeaders, canon) {
			return nil, fmt.Errorf("%w: header %q is the broker's", ErrInvalid, canon)
		}
		if _, dup := h[canon]; dup {
			return nil, fmt.Errorf("%w: header %q twice", ErrInvalid, canon)
		}
		if err := expectDelim(d, '['); err != nil {
			return nil, err
		}
		vs := []string{}
		for d.More() {
			v, err := stringToken(d)
			if err != nil {
				return nil, err
			}
			if !validHeaderValue(v) {
				return nil, fmt.Errorf("%w: header %q: a value with control characters", ErrInvalid, canon)
			}
			values++
			size += len(canon) + len(v)
			if values > maxHeaderValues || size > maxHeaderBytes {
				return nil, fmt.Errorf("%w: headers over %d values or %d bytes", ErrInvalid, maxHeaderValues, maxHeaderBytes)
			}
			vs = append(vs, v)
		}
		if err := expectDelim(d, ']'); err != nil {
			return nil, err
		}
		if len(vs) == 0 {
			return nil, fmt.Errorf("%w: header %q without a value", ErrInvalid, canon)
		}
		h[canon] = vs
	}
	if err := expectDelim(d, '}'); err != nil {
		return nil, err
	}
	return h, nil
}

// validHeaderName: an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue: no control characters but tab.
func validHeaderValue(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// parseURL checks the URL and fills r.url, r.host and r.port. The URL
// keeps its path and query as given; its host is rewritten in canonical
// form, with the port only when it is not the scheme's default, so that
// the transport dials, verifies and sends Host for exactly the host that
// was checked.
func (r *request) parseURL(raw string) error {
	if len(raw) > maxURLLen {
		return fmt.Errorf("%w: url over %d bytes", ErrInvalid, maxURLLen)
	}
	for i := range len(raw) {
		if c := raw[i]; c <= ' ' || c >= 0x7f {
			return fmt.Errorf("%w: url: a byte outside printable ASCII (percent-encode it)", ErrInvalid)
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		// Not the URL itself: it may carry a secret.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%w: url: %v", ErrInvalid, err)
	}
	var defaultPort uint16
	switch u.Scheme {
	case "http":
		defaultPort = 80
	case "https":
		defaultPort = 443
	default:
		return fmt.Errorf("%w: url scheme %q (http or https)", ErrInvalid, u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return fmt.Errorf("%w: url without a host", ErrInvalid)
	}
	if u.User != nil {
		return fmt.Errorf("%w: url with userinfo", ErrInvalid)
	}
	h, err := policy.ParseHost(u.Hostname())
	if err != nil {
		return fmt.Errorf("%w: url: %v", ErrInvalid, err)
	}
	port := defaultPort
	if p := u.Port(); p != "" {
		if port, err = parsePort(p); err != nil {
			return fmt.Errorf("%w: url: %v", ErrInvalid, err)
		}
	}
	u.Host = urlHost(h, port, defaultPort)
	u.Fragment, u.RawFragment = "", ""
	r.url, r.host, r.port = u, h, port
	return nil
}

// urlHost is host[:port] for a URL: brackets around IPv6, the port only
// when not the default.
func urlHost(h policy.Host, port, defaultPort uint16) string {
	if port != defaultPort {
		return net.JoinHostPort(h.String(), strconv.Itoa(int(port)))
	}
	if h.IsIP() && bytes.IndexByte([]byte(h.String()), ':') >= 0 {
		return "[" + h.String() + "]"
	}
	return h.String()
}

// dialAddr is the address the transport asks to dial for host and port.
func dialAddr(h policy.Host, port uint16) string {
	return net.JoinHostPort(h.String(), strconv.Itoa(int(port)))
}
