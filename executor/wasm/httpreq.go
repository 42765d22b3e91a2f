package wasm

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Bounds of an http_request request.
const (
	maxURLBytes         = 8 << 10
	maxHeaders          = 64
	maxHeaderNameBytes  = 256
	maxHeaderBytes      = 64 << 10 // names and values together
	maxRequestBodyBytes = 3 << 20  // decoded; the JSON is at most MaxRequestBytes
)

// httpRequest is a request the guest asked for, checked.
type httpRequest struct {
	host      string // the URL's host, without port or brackets
	canonical []byte // the request re-encoded, for the broker
}

// canonicalRequest is the JSON the broker gets: header names lower-case,
// each with its one value in a list (the broker's shape, which allows
// several), members in a fixed order, body re-encoded.
type canonicalRequest struct {
	Method  string              `json:"method"`
	URL     string              `json:"url"`
	Headers map[string][]string `json:"headers,omitempty"` // encoding/json sorts the keys
	Body    string              `json:"body,omitempty"`
}

var httpMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true,
}

// forbiddenHeaders are set by the broker's HTTP client, or are hop-by-hop:
// a guest that could set them could smuggle a second request or reach
// another host.
var forbiddenHeaders = map[string]bool{
	"host": true, "content-length": true, "transfer-encoding": true, "connection": true,
	"keep-alive": true, "proxy-connection": true, "proxy-authorization": true,
	"proxy-authenticate": true, "te": true, "trailer": true, "upgrade": true, "expect": true,
	"http2-settings": true,
}

var errRequest = errors.New("wasm: malformed http request")

func requestError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errRequest, fmt.Sprintf(format, args...))
}

// parseHTTPRequest decodes the guest's http_request argument strictly (see
// the package documentation): one JSON object, valid UTF-8, no member
// repeated or unknown, nothing after it. The result is re-encoded, so that
// the broker never parses the guest's bytes and the two cannot read them
// differently.
func parseHTTPRequest(raw []byte) (*httpRequest, error) {
	if !utf8.Valid(raw) {
		return nil, requestError("not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	var req canonicalRequest
	seen := map[string]bool{}
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, requestError("member %q repeated", key)
		}
		seen[key] = true
		switch key {
		case "method":
			req.Method, err = stringToken(dec)
		case "url":
			req.URL, err = stringToken(dec)
		case "body":
			req.Body, err = stringToken(dec)
		case "headers":
			var h map[string]string
			if h, err = headersObject(dec); err == nil && len(h) > 0 {
				req.Headers = make(map[string][]string, len(h))
				for k, v := range h {
					req.Headers[k] = []string{v}
				}
			}
		default:
			return nil, requestError("unknown member %q", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, requestError("data after the object")
	}

	if !httpMethods[req.Method] {
		return nil, requestError("method %q", req.Method)
	}
	host, err := checkURL(req.URL)
	if err != nil {
		return nil, err
	}
	if seen["body"] {
		body, err := base64.StdEncoding.Strict().DecodeString(req.Body)
		if err != nil {
			return nil, requestError("body is not standard base64")
		}
		if len(body) > maxRequestBodyBytes {
			return nil, requestError("body over %d bytes", maxRequestBodyBytes)
		}
		req.Body = base64.StdEncoding.EncodeToString(body)
	}
	canonical, err := json.Marshal(req)
	if err != nil {
		return nil, requestError("re-encoding: %v", err)
	}
	return &httpRequest{host: host, canonical: canonical}, nil
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return requestError("%v", err)
	}
	if t != d {
		return requestError("expected %v", d)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", requestError("%v", err)
	}
	s, ok := t.(string)
	if !ok {
		return "", requestError("expected a string")
	}
	return s, nil
}

// headersObject reads {"name": "value", ...}; names are compared and
// re-encoded lower-case.
func headersObject(dec *json.Decoder) (map[string]string, error) {
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	headers := map[string]string{}
	size := 0
	for dec.More() {
		name, err := stringToken(dec)
		if err != nil {
			return nil, err
		}
		value, err := stringToken(dec)
		if err != nil {
			return nil, err
		}
		lower := strings.ToLower(name)
		if _, dup := headers[lower]; dup {
			return nil, requestError("header %q repeated", name)
		}
		if !validHeaderName(name) || forbiddenHeaders[lower] || strings.HasPrefix(lower, "proxy-") {
			return nil, requestError("header name %q", name)
		}
		if !validHeaderValue(value) {
			return nil, requestError("the value of header %q", name)
		}
		size += len(name) + len(value)
		if len(headers) >= maxHeaders || size > maxHeaderBytes {
			return nil, requestError("over %d headers or %d bytes of them", maxHeaders, maxHeaderBytes)
		}
		headers[lower] = value
	}
	if err := expectDelim(dec, '}'); err != nil {
		return nil, err
	}
	return headers, nil
}

// validHeaderName: an RFC 9110 token.
func validHeaderName(s string) bool {
	if s == "" || len(s) > maxHeaderNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// validHeaderValue: no control characters but tab, no DEL.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// checkURL checks the URL and returns its host.
func checkURL(raw string) (string, error) {
	if len(raw) > maxURLBytes {
		return "", requestError("url over %d bytes", maxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", requestError("url does not parse")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", requestError("url scheme %q", u.Scheme)
	case u.Opaque != "" || u.User != nil || u.Host == "":
		return "", requestError("url is not an absolute http URL without user information")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "", requestError("url has a fragment")
	case u.String() != raw:
		return "", requestError("url is not in canonical form")
	}
	host := u.Hostname()
	if host == "" || host != strings.ToLower(host) || strings.ContainsAny(host, "%") {
		return "", requestError("url host is empty or not lower-case")
	}
	if p := u.Port(); p != "" {
		if len(p) > 5 || p[0] == '0' {
			return "", requestError("url port %q", p)
		}
		n := 0
		for _, c := range p {
			n = n*10 + int(c-'0')
		}
		if n > 65535 {
			return "", requestError("url port %q", p)
		}
	}
	return host, nil
}
