package ipc

import (
	"bytes"
	"encoding/hex"
	"errors"
	"runtime"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// walkTests are bodies CheckBody must accept or refuse. The same table seeds
// the allocation test below.
var walkTests = []struct {
	name string
	hex  string
	ok   bool
}{
	{"fixint", "07", true},
	{"nil", "c0", true},
	{"empty map", "80", true},
	{"map one pair", "81a1610c", true},
	{"array of three", "93010203", true},
	{"str8", "d903616263", true},
	{"bin8", "c403010203", true},
	{"float64", "cb3ff0000000000000", true},
	{"uint64", "cfffffffffffffffff", true},
	{"array16 of two", "dc00020102", true},
	{"array32 of one", "dd0000000101", true},
	{"empty", "", false},
	{"array32 bomb", "ddffffffff", false},
	{"map32 bomb", "dfffffffff", false},
	{"array16 bomb", "dcffff", false},
	{"map16 bomb", "deffff", false},
	{"str32 bomb", "dbffffffff", false},
	{"bin32 bomb", "c6ffffffff", false},
	{"fixarray past end", "9f01", false},
	{"fixmap half pair", "81a161", false},
	{"map count fits elements but not pairs", "8301020304", false},
	{"truncated uint32", "ce0001", false},
	{"truncated str8 length", "d9", false},
	{"trailing byte", "0101", false},
	{"two values", "8080", false},
	{"ext8", "c70101ff", false},
	{"fixext1", "d401ff", false},
	{"timestamp ext", "d6ff00000000", false},
	{"reserved c1", "c1", false},
	{"bomb inside map", "81a161ddffffffff", false},
}

func TestCheckBody(t *testing.T) {
	for _, tt := range walkTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckBody(mustHex(t, tt.hex))
			if tt.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !tt.ok {
				if err == nil {
					t.Fatal("accepted")
				}
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("error %v does not wrap ErrMalformed", err)
				}
			}
		})
	}
}

func nested(depth int) []byte {
	b := bytes.Repeat([]byte{0x91}, depth) // fixarray of one, depth times
	return append(b, 0x01)
}

func TestCheckBodyDepth(t *testing.T) {
	if err := CheckBody(nested(MaxDepth)); err != nil {
		t.Fatalf("depth %d refused: %v", MaxDepth, err)
	}
	if err := CheckBody(nested(MaxDepth + 1)); err == nil {
		t.Fatalf("depth %d accepted", MaxDepth+1)
	}
	// An empty container at the limit still counts as a level.
	b := append(bytes.Repeat([]byte{0x91}, MaxDepth), 0x90)
	if err := CheckBody(b); err == nil {
		t.Fatal("empty container past the limit accepted")
	}
}

// TestCheckBodyAcceptsWhatWeEncode: every message the codec writes passes.
func TestCheckBodyAcceptsWhatWeEncode(t *testing.T) {
	for _, m := range sampleMessages() {
		b, err := EncodeEnvelope(7, m.kind, m.body)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckBody(b); err != nil {
			t.Fatalf("%s: %v", m.kind, err)
		}
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestBombsAllocateNothingLarge sends the 5-byte array32 frame and its kin
// through the whole read path (frame reader, walk, decode) and checks that
// they are refused and that refusing them allocated less than 64 KiB. The
// library on its own would try to allocate gigabytes for some of them.
func TestBombsAllocateNothingLarge(t *testing.T) {
	for _, tt := range walkTests {
		if tt.ok {
			continue
		}
		body := mustHex(t, tt.hex)
		if len(body) == 0 {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			frame := AppendFrame(nil, body)
			var err error
			n := allocated(func() {
				var b []byte
				if b, err = ReadFrame(bytes.NewReader(frame), ControlFrameMax); err == nil {
					_, err = DecodeEnvelope(b)
				}
			})
			if err == nil {
				t.Fatal("bomb accepted")
			}
			if n > 64<<10 {
				t.Fatalf("refusing allocated %d bytes", n)
			}
		})
	}
}

// TestLibraryWouldAllocate shows the walk is needed: msgpack v5.4.1 itself
// allocates from the header's count. If this starts failing, the library
// gained a limit and the walk is a second line of defence.
func TestLibraryWouldAllocate(t *testing.T) {
	// An array32 claiming 2^24 elements, then nothing: the library makes a
	// slice of 2^24 interface values (256 MiB) before noticing the end.
	bomb := mustHex(t, "dd01000000")
	n := allocated(func() {
		var v []any
		_ = msgpack.Unmarshal(bomb, &v)
	})
	if n < 64<<20 {
		t.Skipf("msgpack allocated only %d bytes for the bomb: the library limits itself now", n)
	}
	if err := CheckBody(bomb); err == nil {
		t.Fatal("CheckBody accepted the bomb")
	}
}
