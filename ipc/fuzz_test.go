package ipc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// The fuzz targets below check properties, not only the absence of panics:
//
//   - CheckBody agrees with an independent recursive statement of its rules,
//     with msgpack's own idea of where a value ends, and bounds what decoding
//     the accepted bytes can allocate;
//   - whatever a decoder accepts, CheckBody accepted first; whatever it refuses
//     is ErrMalformed;
//   - a decoded message re-encodes into bytes that CheckBody accepts and that
//     decode to an equal value, and the encoding is a fixed point;
//   - ReadFrame never returns more than its cap and consumes exactly one frame;
//   - spawn packets round-trip byte for byte.
//
// Each target is seeded from the protocol vectors (vectors_test.go) and the
// known-bad bodies below, with f.Add and with the committed corpus in
// testdata/fuzz/<FuzzName>/, which `go test` runs too. Regenerate the corpus
// after changing the tables with
//
//	go test ./ipc -run TestFuzzSeedCorpus -update
//
// and run one target with, for example,
//
//	go test -run='^$' -fuzz='^FuzzCheckBody$' -fuzztime=10s ./ipc/

// fuzzSeed is one named fuzz input.
type fuzzSeed struct {
	name string
	b    []byte
}

// goodVectors are the vectors encoded by the real encoder.
func goodVectors() []protoVector {
	var vs []protoVector
	for _, v := range protoVectors {
		if v.frame == nil {
			vs = append(vs, v)
		}
	}
	return vs
}

// envelopeSeeds are the bodies of every vector frame: what DecodeEnvelope
// gets after ReadFrame.
func envelopeSeeds() []fuzzSeed {
	var s []fuzzSeed
	for _, v := range protoVectors {
		frame, err := v.encodeFrame()
		if err != nil {
			panic(err)
		}
		if len(frame) <= frameHeader || int(binary.BigEndian.Uint32(frame)) != len(frame)-frameHeader {
			continue // a frame-level vector: no body to speak of
		}
		s = append(s, fuzzSeed{"env-" + v.name, frame[frameHeader:]})
	}
	return s
}

// messageSeeds are the bodies of the good vectors on their own: what
// Message.Decode gets.
func messageSeeds() []fuzzSeed {
	var s []fuzzSeed
	for _, v := range goodVectors() {
		s = append(s, fuzzSeed{"msg-" + v.name, mustMarshal(v.body)})
	}
	return s
}

// badBodySeeds are bodies that must be refused, and odd ones that the decoder
// accepts, to start the fuzzer near the edges.
func badBodySeeds() []fuzzSeed {
	hello := mustMarshal(Hello{Proto: ProtocolName, Version: ProtocolVersion, Channel: ChannelAgent})
	call := mustMarshal(CallRequest{Tool: "process.run", Args: []string{"/bin/echo", "hello"}, TimeoutMS: 5000})
	key := func(k string) []byte { return mustMarshal(k) }
	return []fuzzSeed{
		{"bad-array32-bomb", []byte{0xdd, 0xff, 0xff, 0xff, 0xff}},
		{"bad-map32-bomb", []byte{0xdf, 0xff, 0xff, 0xff, 0xff}},
		{"bad-str32-bomb", []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'a', 'b', 'c'}},
		{"bad-bin32-bomb", []byte{0xc6, 0xff, 0xff, 0xff, 0xff, 0x00}},
		{"bad-array16-short", []byte{0xdc, 0x00, 0x10, 0xc0}},
		{"bad-map16-short", []byte{0xde, 0x00, 0x10, 0xa1, 'a', 0xc0}},
		{"bad-fixmap-short", []byte{0x82, 0xa1, 'a', 0xc0, 0xa1}},
		{"bad-str8-past-end", []byte{0xd9, 0x20, 'a'}},
		{"bad-array32-bomb-in-map", concatBytes([]byte{0x81}, key("args"), []byte{0xdd, 0xff, 0xff, 0xff, 0xff})},
		{"bad-nesting-33", append(bytes.Repeat([]byte{0x91}, MaxDepth+1), 0xc0)},
		{"bad-nesting-33-empty", append(bytes.Repeat([]byte{0x91}, MaxDepth), 0x90)},
		{"bad-nesting-33-maps", append(bytes.Repeat([]byte{0x81, 0xa0}, MaxDepth+1), 0xc0)},
		{"odd-nesting-32", append(bytes.Repeat([]byte{0x91}, MaxDepth), 0xc0)},
		{"bad-trailing-byte", append(slices.Clone(hello), 0x00)},
		{"bad-trailing-value", append(slices.Clone(call), hello...)},
		{"bad-fixext1", []byte{0xd4, 0x01, 0x00}},
		{"bad-fixext2", []byte{0xd5, 0x01, 0x00, 0x00}},
		{"bad-timestamp32", []byte{0xd6, 0xff, 0x65, 0x5f, 0x00, 0x00}},
		{"bad-timestamp64", []byte{0xd7, 0xff, 0, 0, 0, 0, 0x65, 0x5f, 0x00, 0x00}},
		{"bad-fixext16", append([]byte{0xd8, 0x01}, make([]byte, 16)...)},
		{"bad-ext8", []byte{0xc7, 0x01, 0x05, 0x00}},
		{"bad-ext16", []byte{0xc8, 0x00, 0x01, 0x05, 0x00}},
		{"bad-ext32", []byte{0xc9, 0x00, 0x00, 0x00, 0x01, 0x05, 0x00}},
		{"bad-ext-in-field", concatBytes([]byte{0x81}, key("tool"), []byte{0xd4, 0x01, 0x00})},
		{"bad-reserved-c1", []byte{0xc1}},
		{"bad-truncated-half", call[:len(call)/2]},
		{"bad-truncated-last", call[:len(call)-1]},
		{"bad-empty", []byte{}},
		{"odd-nil", []byte{0xc0}},
		{"odd-empty-map", []byte{0x80}},
		{"odd-empty-array", []byte{0x90}},
		// Structs also decode from arrays of exactly their field count.
		{"odd-array-envelope", concatBytes([]byte{0x94, 0x01, 0x00}, mustMarshal(KindHello), hello)},
		{"odd-array-hello", concatBytes([]byte{0x94}, mustMarshal(ProtocolName), []byte{0x01}, mustMarshal(ChannelAgent), []byte{0xa0})},
		{"odd-float-version", concatBytes([]byte{0x84}, key("v"), []byte{0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0}, key("id"), []byte{0x00}, key("kind"), mustMarshal(KindStatus), key("body"), []byte{0x80})},
		{"odd-negative-id", concatBytes([]byte{0x84}, key("v"), []byte{0x01}, key("id"), []byte{0xff}, key("kind"), mustMarshal(KindStatus), key("body"), []byte{0x80})},
		{"odd-duplicate-key", concatBytes([]byte{0x82}, key("tool"), mustMarshal("echo"), key("tool"), mustMarshal("process.run"))},
		{"odd-int-key", []byte{0x81, 0x01, 0x01}},
		{"odd-exit-uint64-max", concatBytes([]byte{0x81}, key("exit_code"), []byte{0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})},
		{"odd-peer-uid-over-32-bits", concatBytes([]byte{0x81}, key("peer_uid"), []byte{0xcf, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05})},
		{"odd-bin-as-string", concatBytes([]byte{0x81}, key("proto"), []byte{0xc4, 0x08}, []byte(ProtocolName))},
		{"odd-str-as-bytes", concatBytes([]byte{0x81}, key("stdout"), mustMarshal("hello\n"))},
		{"odd-empty-bin", concatBytes([]byte{0x81}, key("stdout"), []byte{0xc4, 0x00})},
		{"odd-nil-fields", concatBytes([]byte{0x83}, key("tool"), []byte{0xc0}, key("args"), []byte{0xc0}, key("usage"), []byte{0xc0})},
		{"odd-array-of-nils", concatBytes([]byte{0x81}, key("tools"), []byte{0x93, 0xc0, 0xc0, 0xc0})},
	}
}

// frameSeeds are byte streams for ReadFrame.
func frameSeeds() []fuzzSeed {
	var s []fuzzSeed
	for _, v := range protoVectors {
		frame, err := v.encodeFrame()
		if err != nil {
			panic(err)
		}
		s = append(s, fuzzSeed{"frame-" + v.name, frame})
	}
	hello, _ := protoVectors[0].encodeFrame()
	list := AppendFrame(nil, mustMarshal(outEnvelope{V: 1, ID: 1, Kind: KindListTools, Body: Empty{}}))
	return append(s,
		fuzzSeed{"frame-two", concatBytes(list, list)},
		fuzzSeed{"frame-then-garbage", concatBytes(list, []byte{0x00, 0x00})},
		fuzzSeed{"frame-hello-then-list", concatBytes(hello, list)},
		fuzzSeed{"frame-empty", []byte{}},
		fuzzSeed{"frame-short-header", []byte{0x00, 0x00}},
		fuzzSeed{"frame-short-body", []byte{0x00, 0x00, 0x00, 0x10, 0x80, 0x80, 0x80}},
		fuzzSeed{"frame-one-byte", []byte{0x00, 0x00, 0x00, 0x01, 0x80}},
		fuzzSeed{"frame-at-cap", concatBytes([]byte{0x00, 0x00, 0x01, 0x00}, make([]byte, fuzzFrameCap))},
		fuzzSeed{"frame-over-cap", concatBytes([]byte{0x00, 0x00, 0x01, 0x01}, make([]byte, fuzzFrameCap+1))},
		fuzzSeed{"frame-max-length", []byte{0xff, 0xff, 0xff, 0xff}},
	)
}

// spawnSeeds are packets for both spawn parsers.
func spawnSeeds() []fuzzSeed {
	return []fuzzSeed{
		{"request-0", SpawnRequest{}.Marshal()},
		{"request-1", SpawnRequest{Seq: 1}.Marshal()},
		{"request-max", SpawnRequest{Seq: 0xffffffff}.Marshal()},
		{"reply-ok", SpawnReply{Seq: 1, Code: SpawnOK}.Marshal()},
		{"reply-unavailable", SpawnReply{Seq: 7, Code: SpawnUnavailable}.Marshal()},
		{"reply-link", SpawnReply{Link: true}.Marshal()},
		{"bad-short", []byte("SPW")},
		{"bad-empty", []byte{}},
		{"bad-request-long", append(SpawnRequest{Seq: 1}.Marshal(), 0)},
		{"bad-request-link-magic", []byte("LINK\x00\x00\x00\x01")},
		{"bad-reply-magic", []byte("SPWM\x00\x00\x00\x01\x00\x00\x00\x00")},
		{"bad-reply-long", append(SpawnReply{Seq: 1}.Marshal(), 0)},
		{"bad-reply-lowercase", []byte("link\x00\x00\x00\x00\x00\x00\x00\x00")},
	}
}

// fuzzSeeds names the seeds of every target.
var fuzzSeeds = map[string]func() []fuzzSeed{
	"FuzzReadFrame":         frameSeeds,
	"FuzzCheckBody":         bodySeeds,
	"FuzzDecodeEnvelope":    bodySeeds,
	"FuzzHello":             messageAndBadSeeds,
	"FuzzEmpty":             messageAndBadSeeds,
	"FuzzToolList":          messageAndBadSeeds,
	"FuzzCallRequest":       messageAndBadSeeds,
	"FuzzOutcome":           messageAndBadSeeds,
	"FuzzExecSpec":          messageAndBadSeeds,
	"FuzzRoleStatus":        messageAndBadSeeds,
	"FuzzBrokerStatus":      messageAndBadSeeds,
	"FuzzError":             messageAndBadSeeds,
	"FuzzResolveRequest":    messageAndBadSeeds,
	"FuzzResolved":          messageAndBadSeeds,
	"FuzzHostRequest":       messageAndBadSeeds,
	"FuzzHostResult":        messageAndBadSeeds,
	"FuzzWasmModule":        messageAndBadSeeds,
	"FuzzParseSpawnRequest": spawnSeeds,
	"FuzzParseSpawnReply":   spawnSeeds,
}

func bodySeeds() []fuzzSeed {
	return slices.Concat(envelopeSeeds(), messageSeeds(), badBodySeeds())
}

func messageAndBadSeeds() []fuzzSeed { return slices.Concat(messageSeeds(), badBodySeeds()) }

// addSeeds adds the target's seeds (named by f.Name()) to its corpus.
func addSeeds(f *testing.F) {
	seeds, ok := fuzzSeeds[f.Name()]
	if !ok {
		f.Fatalf("no seeds for %s", f.Name())
	}
	for _, s := range seeds() {
		f.Add(s.b)
	}
}

// corpusFile is a seed in the format of `go test` fuzz corpus files.
func corpusFile(b []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b)
}

// TestFuzzSeedCorpus keeps testdata/fuzz/<FuzzName>/seed-* equal to the seed
// tables, so that `go test` runs the committed corpus. Files the fuzzer adds
// (named by hash) are left alone. Regenerate with
//
//	go test ./ipc -run TestFuzzSeedCorpus -update
func TestFuzzSeedCorpus(t *testing.T) {
	for name, seeds := range fuzzSeeds {
		dir := filepath.Join("testdata", "fuzz", name)
		want := map[string][]byte{}
		for _, s := range seeds() {
			file := "seed-" + s.name
			if _, dup := want[file]; dup {
				t.Fatalf("%s: two seeds named %s", name, s.name)
			}
			want[file] = corpusFile(s.b)
		}
		if *updateGolden {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			old, _ := filepath.Glob(filepath.Join(dir, "seed-*"))
			for _, f := range old {
				if _, keep := want[filepath.Base(f)]; !keep {
					if err := os.Remove(f); err != nil {
						t.Fatal(err)
					}
				}
			}
			for file, data := range want {
				if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		have, _ := filepath.Glob(filepath.Join(dir, "seed-*"))
		for _, f := range have {
			if _, ok := want[filepath.Base(f)]; !ok {
				t.Errorf("%s: stale seed (regenerate: go test ./ipc -run TestFuzzSeedCorpus -update)", f)
			}
		}
		for file, data := range want {
			got, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("%s/%s is missing or differs (regenerate: go test ./ipc -run TestFuzzSeedCorpus -update)", dir, file)
			}
		}
	}
}

// TestSeedsAgainstCheckBody makes the seed names true: every "bad-" body is
// refused by the walk or the decoders, every other one is accepted by the walk.
func TestSeedsAgainstCheckBody(t *testing.T) {
	for _, s := range bodySeeds() {
		err := CheckBody(s.b)
		switch {
		case strings.HasPrefix(s.name, "bad-"):
			if err == nil {
				t.Errorf("%s: CheckBody accepted % x", s.name, s.b)
			}
		case strings.HasPrefix(s.name, "env-bad-"):
			// Refused by the walk, or later: the envelope or body decoder.
		default:
			if err != nil {
				t.Errorf("%s: %v", s.name, err)
			}
		}
	}
}

// --- Allocation and equality helpers.

// heapAllocs is the cumulative bytes allocated on the heap. It lags small
// allocations by up to a span per size class, so bounds get slack.
func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// allocSlack covers the lag of heapAllocs and the decoder's fixed costs.
const allocSlack = 2 << 20

// maxStructAmplification bounds the bytes decoding allocates per input byte
// into the message structs: the worst is a []ToolInfo of nils, one byte each
// becoming a 72-byte ToolInfo.
const maxStructAmplification = 128

// maxAnyAmplification bounds the same for decoding into any: a one-entry map
// (3 bytes, or 2 when nested) becomes a Go map of a few hundred bytes.
const maxAnyAmplification = 256

// nilEmptySlices makes nil and empty slices equal, recursively: the encoder writes
// a nil slice as msgpack nil and omits an empty omitempty one, so the two
// cannot survive a round trip apart.
func nilEmptySlices(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			nilEmptySlices(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Field(i).CanSet() {
				nilEmptySlices(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			if v.CanSet() {
				v.Set(reflect.Zero(v.Type()))
			}
			return
		}
		for i := range v.Len() {
			nilEmptySlices(v.Index(i))
		}
	}
}

// checkDecode is the property of every message decoder: Unmarshal of b into
// a typ either fails with ErrMalformed or yields a value that re-encodes to
// accepted bytes, decodes again to an equal value, and encodes to the same
// bytes again.
func checkDecode(t *testing.T, b []byte, typ reflect.Type) {
	t.Helper()
	walkErr := CheckBody(b)
	p := reflect.New(typ)
	before := heapAllocs()
	err := Unmarshal(b, p.Interface())
	if n := heapAllocs() - before; n > uint64(maxStructAmplification*len(b)+allocSlack) {
		t.Fatalf("decoding %d bytes into %s allocated %d bytes", len(b), typ, n)
	}
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("Unmarshal into %s: %v does not wrap ErrMalformed", typ, err)
		}
		return
	}
	if walkErr != nil {
		t.Fatalf("Unmarshal into %s accepted what CheckBody refused (%v): % x", typ, walkErr, b)
	}
	enc, err := Marshal(p.Elem().Interface())
	if err != nil {
		t.Fatalf("Marshal of a decoded %s: %v", typ, err)
	}
	if err := CheckBody(enc); err != nil {
		t.Fatalf("CheckBody refuses our own encoding of a %s: %v\n% x", typ, err, enc)
	}
	q := reflect.New(typ)
	if err := Unmarshal(enc, q.Interface()); err != nil {
		t.Fatalf("Unmarshal of our own encoding of a %s: %v\n% x", typ, err, enc)
	}
	enc2, err := Marshal(q.Elem().Interface())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(enc, enc2) {
		t.Fatalf("%s encoding is not a fixed point:\n% x\n% x", typ, enc, enc2)
	}
	nilEmptySlices(p)
	nilEmptySlices(q)
	if !reflect.DeepEqual(p.Elem().Interface(), q.Elem().Interface()) {
		t.Fatalf("%s round trip:\n%#v\n%#v", typ, p.Elem().Interface(), q.Elem().Interface())
	}
}

func fuzzMessage[T any](f *testing.F) {
	addSeeds(f)
	typ := reflect.TypeFor[T]()
	f.Fuzz(func(t *testing.T, b []byte) { checkDecode(t, b, typ) })
}

func FuzzHello(f *testing.F)          { fuzzMessage[Hello](f) }
func FuzzEmpty(f *testing.F)          { fuzzMessage[Empty](f) }
func FuzzToolList(f *testing.F)       { fuzzMessage[ToolList](f) }
func FuzzCallRequest(f *testing.F)    { fuzzMessage[CallRequest](f) }
func FuzzOutcome(f *testing.F)        { fuzzMessage[Outcome](f) }
func FuzzExecSpec(f *testing.F)       { fuzzMessage[ExecSpec](f) }
func FuzzRoleStatus(f *testing.F)     { fuzzMessage[RoleStatus](f) }
func FuzzBrokerStatus(f *testing.F)   { fuzzMessage[BrokerStatus](f) }
func FuzzError(f *testing.F)          { fuzzMessage[Error](f) }
func FuzzResolveRequest(f *testing.F) { fuzzMessage[ResolveRequest](f) }
func FuzzResolved(f *testing.F)       { fuzzMessage[Resolved](f) }
func FuzzHostRequest(f *testing.F)    { fuzzMessage[HostRequest](f) }
func FuzzHostResult(f *testing.F)     { fuzzMessage[HostResult](f) }
func FuzzWasmModule(f *testing.F)     { fuzzMessage[WasmModule](f) }

// --- The body walk.

// refCheck is an independent, recursive statement of CheckBody's rules, for a
// differential test: exactly one value; every container's count of values (a
// map's entries count twice) at most the bytes left after its header; every
// length within the bytes left; nesting at most MaxDepth, empty containers
// included; no extension types and no 0xc1.
func refCheck(b []byte) bool {
	n, ok := refValue(b, 0, 0)
	return ok && n == len(b)
}

func refValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	c := b[i]
	i++
	length := func(size int) (uint64, bool) {
		if len(b)-i < size {
			return 0, false
		}
		var n uint64
		for _, x := range b[i : i+size] {
			n = n<<8 | uint64(x)
		}
		i += size
		return n, true
	}
	sizes := map[byte]int{0xc4: 1, 0xd9: 1, 0xc5: 2, 0xda: 2, 0xc6: 4, 0xdb: 4, 0xdc: 2, 0xde: 2, 0xdd: 4, 0xdf: 4}
	var count, skip uint64
	container := false
	switch {
	case c <= 0x7f, c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
	case c >= 0x80 && c <= 0x8f:
		count, container = 2*uint64(c-0x80), true
	case c >= 0x90 && c <= 0x9f:
		count, container = uint64(c-0x90), true
	case c >= 0xa0 && c <= 0xbf:
		skip = uint64(c - 0xa0)
	case c == 0xcc, c == 0xd0:
		skip = 1
	case c == 0xcd, c == 0xd1:
		skip = 2
	case c == 0xca, c == 0xce, c == 0xd2:
		skip = 4
	case c == 0xcb, c == 0xcf, c == 0xd3:
		skip = 8
	case sizes[c] != 0:
		n, ok := length(sizes[c])
		if !ok {
			return 0, false
		}
		switch c {
		case 0xdc, 0xdd:
			count, container = n, true
		case 0xde, 0xdf:
			count, container = 2*n, true
		default:
			skip = n
		}
	default: // extension types, 0xc1
		return 0, false
	}
	if skip > uint64(len(b)-i) {
		return 0, false
	}
	i += int(skip)
	if !container {
		return i, true
	}
	if depth+1 > MaxDepth || count > uint64(len(b)-i) {
		return 0, false
	}
	for range count {
		var ok bool
		if i, ok = refValue(b, i, depth+1); !ok {
			return 0, false
		}
	}
	return i, true
}

// depthOf is the container nesting of a value decoded into any.
func depthOf(v any) int {
	d := 0
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			d = max(d, depthOf(e))
		}
		return d + 1
	case map[string]any:
		for _, e := range v {
			d = max(d, depthOf(e))
		}
		return d + 1
	case map[any]any:
		for k, e := range v {
			d = max(d, depthOf(k), depthOf(e))
		}
		return d + 1
	}
	return 0
}

func FuzzCheckBody(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		err := CheckBody(b)
		if ref := refCheck(b); ref != (err == nil) {
			t.Fatalf("CheckBody: %v; the reference walk accepts: %v\n% x", err, ref, b)
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%v does not wrap ErrMalformed", err)
			}
			return
		}
		// msgpack agrees on where the one value ends.
		r := bytes.NewReader(b)
		if err := msgpack.NewDecoder(r).Skip(); err != nil || r.Len() != 0 {
			t.Fatalf("msgpack Skip: %v, %d bytes left\n% x", err, r.Len(), b)
		}
		// A value is self-delimiting: a strict prefix or an extension of an
		// accepted body is refused.
		if CheckBody(b[:len(b)-1]) == nil {
			t.Fatalf("accepted both % x and its prefix", b)
		}
		if CheckBody(append(slices.Clip(b), 0xc0)) == nil {
			t.Fatalf("accepted % x with a trailing byte", b)
		}
		// The worst the decoder can do with accepted bytes is bounded by
		// their length: no container count reaches past them.
		before := heapAllocs()
		var v any
		derr := msgpack.NewDecoder(bytes.NewReader(b)).Decode(&v)
		if n := heapAllocs() - before; n > uint64(maxAnyAmplification*len(b)+allocSlack) {
			t.Fatalf("decoding %d accepted bytes into any allocated %d bytes", len(b), n)
		}
		if derr == nil && depthOf(v) > MaxDepth {
			t.Fatalf("accepted a value nested %d deep", depthOf(v))
		}
	})
}

// --- Envelopes.

// encodeMessage encodes m again. An envelope that had no body field gets
// none: a nil RawMessage would encode as nothing at all.
func encodeMessage(m *Message) ([]byte, error) {
	if len(m.body) == 0 {
		return Marshal(struct {
			V    int    `msgpack:"v"`
			ID   uint64 `msgpack:"id"`
			Kind Kind   `msgpack:"kind"`
		}{ProtocolVersion, m.ID, m.Kind})
	}
	return EncodeEnvelope(m.ID, m.Kind, msgpack.RawMessage(m.body))
}

// kindTypes lists every body type a kind has on some channel and direction.
var kindTypes = map[Kind][]reflect.Type{
	KindHello:     {reflect.TypeFor[Hello]()},
	KindError:     {reflect.TypeFor[Error]()},
	KindListTools: {reflect.TypeFor[Empty](), reflect.TypeFor[ToolList]()},
	KindCall:      {reflect.TypeFor[CallRequest](), reflect.TypeFor[Outcome]()},
	KindStatus:    {reflect.TypeFor[Empty](), reflect.TypeFor[RoleStatus](), reflect.TypeFor[BrokerStatus]()},
	KindExec:      {reflect.TypeFor[ExecSpec](), reflect.TypeFor[Outcome]()},
}

func FuzzDecodeEnvelope(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		walkErr := CheckBody(b)
		m, err := DecodeEnvelope(b)
		if err != nil {
			switch {
			case errors.Is(err, ErrMalformed):
			case errors.Is(err, ErrVersionMismatch):
				if walkErr != nil {
					t.Fatalf("version mismatch for bytes CheckBody refuses (%v)", walkErr)
				}
				if ClassOf(err) != ClassVersionMismatch {
					t.Fatalf("class %s", ClassOf(err))
				}
			default:
				t.Fatalf("DecodeEnvelope: %v is neither malformed nor a version mismatch", err)
			}
			return
		}
		if walkErr != nil {
			t.Fatalf("DecodeEnvelope accepted what CheckBody refused (%v): % x", walkErr, b)
		}
		if !m.Kind.valid() {
			t.Fatalf("accepted kind %q", m.Kind)
		}
		enc, err := encodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := DecodeEnvelope(enc)
		if err != nil {
			t.Fatalf("DecodeEnvelope of our own encoding: %v\n% x", err, enc)
		}
		if m2.ID != m.ID || m2.Kind != m.Kind || !bytes.Equal(m2.body, m.body) {
			t.Fatalf("round trip: %+v, %+v", m, m2)
		}
		if enc2, err := encodeMessage(m2); err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("envelope encoding is not a fixed point: % x, % x (%v)", enc, enc2, err)
		}
		for _, typ := range kindTypes[m.Kind] {
			p := reflect.New(typ)
			err := m.Decode(p.Interface())
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode into %s: %v does not wrap ErrMalformed", typ, err)
			}
			if len(m.body) > 0 {
				checkDecode(t, m.body, typ)
			} else if err == nil {
				t.Fatalf("Decode of a missing body succeeded")
			}
		}
		if m.Kind == KindError {
			if e := m.Err(); e == nil || !e.Class.Valid() {
				t.Fatalf("Err() = %v", e)
			}
		}
	})
}

// --- Frames.

// fuzzFrameCap is the small cap FuzzReadFrame reads with.
const fuzzFrameCap = 256

// fuzzMaxFrames bounds the frames FuzzReadFrame reads from one input, so that
// an input's cost does not grow with its length (the engine minimizes new
// inputs byte by byte).
const fuzzMaxFrames = 16

func FuzzReadFrame(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		off := 0
		for range fuzzMaxFrames {
			rest := b[off:]
			body, err := ReadFrame(r, fuzzFrameCap)
			if len(body) > fuzzFrameCap {
				t.Fatalf("a body of %d bytes under a cap of %d", len(body), fuzzFrameCap)
			}
			if err != nil {
				if body != nil {
					t.Fatalf("a body with error %v", err)
				}
				checkFrameError(t, rest, r, err)
				return
			}
			if len(rest) < frameHeader {
				t.Fatalf("read a frame from %d bytes", len(rest))
			}
			n := int(binary.BigEndian.Uint32(rest))
			if n == 0 || n > fuzzFrameCap || len(rest) < frameHeader+n {
				t.Fatalf("accepted a frame of declared length %d from %d bytes", n, len(rest))
			}
			frame := rest[:frameHeader+n]
			if !bytes.Equal(body, frame[frameHeader:]) {
				t.Fatalf("body % x, frame % x", body, frame)
			}
			if got := r.Len(); got != len(rest)-len(frame) {
				t.Fatalf("consumed %d bytes for a frame of %d", len(rest)-got, len(frame))
			}
			if again := AppendFrame(nil, body); !bytes.Equal(again, frame) {
				t.Fatalf("AppendFrame: % x, want % x", again, frame)
			}
			var w bytes.Buffer
			if err := WriteFrame(&w, body, fuzzFrameCap); err != nil || !bytes.Equal(w.Bytes(), frame) {
				t.Fatalf("WriteFrame: %v, % x", err, w.Bytes())
			}
			off += len(frame)
		}
	})
}

// checkFrameError checks that ReadFrame failed on rest for the right reason
// and, for a refused length, read nothing past the prefix.
func checkFrameError(t *testing.T, rest []byte, r *bytes.Reader, err error) {
	t.Helper()
	var want error
	switch {
	case len(rest) == 0:
		want = io.EOF
	case len(rest) < frameHeader:
		want = io.ErrUnexpectedEOF
	default:
		n := binary.BigEndian.Uint32(rest)
		switch {
		case n == 0:
			want = ErrMalformed
		case n > fuzzFrameCap:
			want = ErrFrameTooLarge
		case uint64(len(rest)-frameHeader) < uint64(n):
			want = io.ErrUnexpectedEOF
		default:
			t.Fatalf("ReadFrame: %v for a whole frame", err)
		}
		if n == 0 || n > fuzzFrameCap {
			if got := len(rest) - r.Len(); got != frameHeader {
				t.Fatalf("read %d bytes of a refused frame", got)
			}
		}
	}
	if !errors.Is(err, want) {
		t.Fatalf("ReadFrame: %v, want %v", err, want)
	}
	var w bytes.Buffer
	if len(rest) > frameHeader {
		body := rest[frameHeader:]
		err := WriteFrame(&w, body, fuzzFrameCap)
		if (err == nil) != (len(body) <= fuzzFrameCap) || (err != nil && w.Len() != 0) {
			t.Fatalf("WriteFrame of %d bytes under a cap of %d: %v, wrote %d", len(body), fuzzFrameCap, err, w.Len())
		}
	}
}

// --- Spawn packets.

func FuzzParseSpawnRequest(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseSpawnRequest(b)
		wellFormed := len(b) == SpawnRequestSize && bytes.HasPrefix(b, []byte("SPWN"))
		if err != nil {
			if wellFormed || !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseSpawnRequest(% x): %v", b, err)
			}
			return
		}
		if !wellFormed {
			t.Fatalf("ParseSpawnRequest accepted % x", b)
		}
		if m := r.Marshal(); !bytes.Equal(m, b) {
			t.Fatalf("Marshal(Parse(% x)) = % x", b, m)
		}
	})
}

func FuzzParseSpawnReply(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseSpawnReply(b)
		// A link notice carries no sequence and no code.
		wellFormed := len(b) == SpawnReplySize && (bytes.HasPrefix(b, []byte("SPWN")) ||
			bytes.HasPrefix(b, []byte("LINK")) && bytes.Equal(b[4:], make([]byte, 8)))
		if err != nil {
			if wellFormed || !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseSpawnReply(% x): %v", b, err)
			}
			return
		}
		if !wellFormed {
			t.Fatalf("ParseSpawnReply accepted % x", b)
		}
		if r.Link != bytes.HasPrefix(b, []byte("LINK")) {
			t.Fatalf("Link = %v for % x", r.Link, b)
		}
		if m := r.Marshal(); !bytes.Equal(m, b) {
			t.Fatalf("Marshal(Parse(% x)) = % x", b, m)
		}
	})
}
