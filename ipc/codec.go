package ipc

import (
	"bytes"
	"fmt"
	"os"

	"github.com/vmihailenco/msgpack/v5"
)

// ProtocolVersion is the version every envelope and Hello carries. A peer
// speaking another version gets ClassVersionMismatch and a close.
const ProtocolVersion = 1

// ProtocolName is the Proto field of every Hello.
const ProtocolName = "stockade"

// Envelope is the body of every frame. Body holds the kind's message, still
// encoded; [Message.Decode] decodes it into the concrete type for the kind.
type Envelope struct {
	V    int                `msgpack:"v"`
	ID   uint64             `msgpack:"id"`
	Kind Kind               `msgpack:"kind"`
	Body msgpack.RawMessage `msgpack:"body"`
}

// outEnvelope is the encoding side of Envelope: the body is encoded in place.
type outEnvelope struct {
	V    int    `msgpack:"v"`
	ID   uint64 `msgpack:"id"`
	Kind Kind   `msgpack:"kind"`
	Body any    `msgpack:"body"`
}

// Marshal encodes v as msgpack. Structs encode as maps keyed by their msgpack
// tags, in field order, so an encoding is deterministic.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("ipc: encode: %w", err)
	}
	return buf.Bytes(), nil
}

// Unmarshal checks b with [CheckBody] and decodes it into v, which must be a
// pointer to a concrete struct. The value must be a map (the library would
// also fill a struct from an array, by position); unknown fields are an error.
func Unmarshal(b []byte, v any) error {
	if err := CheckBody(b); err != nil {
		return err
	}
	if c := b[0]; !(c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf) {
		return malformed("message is not a map")
	}
	dec := msgpack.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields(true)
	if err := dec.Decode(v); err != nil {
		return malformed("%v", err)
	}
	return nil
}

// EncodeEnvelope encodes one message: version, id, kind and body.
func EncodeEnvelope(id uint64, kind Kind, body any) ([]byte, error) {
	return Marshal(outEnvelope{V: ProtocolVersion, ID: id, Kind: kind, Body: body})
}

// DecodeEnvelope checks and decodes a frame body into a [Message]. It refuses a
// version other than [ProtocolVersion] with ErrVersionMismatch and a kind
// outside the closed set with ErrMalformed. The body stays encoded until
// [Message.Decode].
func DecodeEnvelope(b []byte) (*Message, error) {
	var env Envelope
	if err := Unmarshal(b, &env); err != nil {
		return nil, err
	}
	if env.V != ProtocolVersion {
		return nil, Errorf(ClassVersionMismatch, "protocol version %d, want %d", env.V, ProtocolVersion)
	}
	if !env.Kind.valid() {
		return nil, malformed("unknown kind %q", env.Kind)
	}
	return &Message{ID: env.ID, Kind: env.Kind, body: env.Body}, nil
}

// Message is a received envelope whose body is not decoded yet.
type Message struct {
	ID   uint64
	Kind Kind
	body msgpack.RawMessage
	// files arrived (SCM_RIGHTS) with the message's frame.
	files []*os.File
}

// Files returns the descriptors that arrived with the message. The
// receiver owns them: it must close them (CloseFiles) or take them.
func (m *Message) Files() []*os.File { return m.files }

// CloseFiles closes the descriptors that arrived with the message.
func (m *Message) CloseFiles() {
	closeFiles(m.files)
	m.files = nil
}

// Decode decodes the body strictly into v. A missing body is malformed; every
// body, even an empty request, is a map.
func (m *Message) Decode(v any) error {
	if len(m.body) == 0 {
		return malformed("missing body")
	}
	return Unmarshal(m.body, v)
}

// Err decodes an `error` message into an *Error. A body that is not a valid
// error becomes ClassProtocol.
func (m *Message) Err() *Error {
	var e Error
	if err := m.Decode(&e); err != nil || !e.valid() {
		return Errorf(ClassProtocol, "peer sent an invalid error message")
	}
	return &e
}
