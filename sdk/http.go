package sdk

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
)

// A Request is an HTTP request the broker performs for the skill.
type Request struct {
	Method string            // GET (when empty), HEAD, POST, PUT, PATCH, DELETE or OPTIONS
	URL    string            // absolute http or https, canonical: "https://api.example.com/v1/items"
	Header map[string]string // name to value; may be nil
	Body   []byte            // may be nil
}

// A Response is what the broker got back. Any status is a response, not an
// error, as in net/http.
type Response struct {
	Status int
	Header map[string]string // never nil
	Body   []byte
}

// An HTTP client reaches one host of the manifest's [capabilities] http.
type HTTP struct {
	ctx  *Ctx
	host string
}

// HTTP returns a client for host (a name as the manifest spells it, no
// scheme or port). Nothing is asked of the host until Do.
func (c *Ctx) HTTP(host string) HTTP { return HTTP{c, host} }

// Do sends req (ABI: handle with KindHTTP, then http_request). The broker,
// not the skill, dials: only the granted host, which req.URL must name; no
// loopback or private addresses unless granted; no redirects to other
// hosts; the response's size and time capped. ErrDenied when the host is
// not granted or req.URL names another; ErrInvalid for a request the host
// refuses (another method, a URL not in canonical form, a header such as
// Host, Content-Length or Connection, two header names equal but for
// case); ErrUnavailable when the broker could not reach the host or
// refused its address; ErrQuota when the response is over its cap.
func (c HTTP) Do(req *Request) (*Response, error) {
	if req == nil {
		return nil, &opError{op: "http_request", name: c.host, err: ErrInvalid}
	}
	h, err := c.ctx.handle(kindHTTP, c.host)
	if err != nil {
		return nil, err
	}
	wire, err := encodeHTTPRequest(req)
	if err != nil {
		return nil, &opError{op: "http_request", name: c.host, err: ErrInvalid}
	}
	b, err := result("http_request", c.host, hostHTTPRequest(h, wire))
	if err != nil {
		return nil, err
	}
	resp, err := decodeHTTPResponse(b)
	if err != nil {
		return nil, &opError{op: "http_request", name: c.host, err: ErrInvalid}
	}
	return resp, nil
}

// The JSON of http_request, as executor/wasm's ABI comment draws it:
//
//	guest → host  {"method":"POST","url":"https://h/p","headers":{"Accept":"text/plain"},"body":"<base64>"}
//	host → guest  {"status":200,"headers":{"content-type":"text/plain"},"body":"<base64>"}
//
// body is standard base64 with padding; the SDK leaves out empty headers
// and body. A response header whose value is an array of strings is read
// as the values joined by ", " (HTTP's way to combine a repeated field).
type httpRequestWire struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

type httpResponseWire struct {
	Status  int         `json:"status"`
	Headers headerValue `json:"headers"`
	Body    string      `json:"body"`
}

func encodeHTTPRequest(req *Request) ([]byte, error) {
	w := httpRequestWire{
		Method:  req.Method,
		URL:     req.URL,
		Headers: req.Header,
		Body:    base64.StdEncoding.EncodeToString(req.Body),
	}
	if w.Method == "" {
		w.Method = "GET"
	}
	return json.Marshal(w)
}

func decodeHTTPResponse(b []byte) (*Response, error) {
	var w httpResponseWire
	if err := json.Unmarshal(b, &w); err != nil {
		return nil, err
	}
	if w.Status < 100 || w.Status > 999 {
		return nil, errors.New("bad status")
	}
	body, err := base64.StdEncoding.Strict().DecodeString(w.Body)
	if err != nil {
		return nil, err
	}
	h := map[string]string(w.Headers)
	if h == nil {
		h = map[string]string{}
	}
	return &Response{Status: w.Status, Header: h, Body: body}, nil
}

// headerValue reads headers whose values are strings or arrays of
// strings.
type headerValue map[string]string

func (h *headerValue) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(headerValue, len(raw))
	for k, v := range raw {
		var one string
		if err := json.Unmarshal(v, &one); err == nil && string(v) != "null" {
			out[k] = one
			continue
		}
		var many []string
		if err := json.Unmarshal(v, &many); err != nil || many == nil {
			return errors.New("a header value is neither a string nor an array of strings")
		}
		out[k] = strings.Join(many, ", ")
	}
	*h = out
	return nil
}
