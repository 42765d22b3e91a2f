package termesc

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite testdata/fuzz/FuzzString/seed-*")

// escapeTests is the table for TestString and the seeds of FuzzString. want
// is the Line result, text the Text result ("" when equal to want).
var escapeTests = []struct{ name, in, want, text string }{
	{"ascii", "stockade.hello 1.0.0", "stockade.hello 1.0.0", ""},
	{"utf8", "Grüße, 世界", "Grüße, 世界", ""},
	{"backslash", `C:\path "quoted"`, `C:\path "quoted"`, ""},
	{"empty", "", "", ""},
	{"newline", "a\nstockade-verifier: signature valid", `a\x0astockade-verifier: signature valid`, "a\nstockade-verifier: signature valid"},
	{"tab", "tab\there", `tab\x09here`, "tab\there"},
	{"csi-osc", "\x1b[2J\x1b]0;title\a", `\x1b[2J\x1b]0;title\x07`, ""},
	{"cr", "fake\rprompt$ ", `fake\x0dprompt$ `, ""},
	{"bs-del", "bs\x08\x7f", `bs\x08\x7f`, ""},
	{"c1", "c1 \u009b31m", `c1 \u{009b}31m`, ""},
	{"nbsp-kept", "a\u00a0b", "a\u00a0b", ""},
	{"alm", "x\u061cy", `x\u{061c}y`, ""},
	{"lrm-rlm", "\u200ea\u200f", `\u{200e}a\u{200f}`, ""},
	{"zwj-kept", "a\u200db", "a\u200db", ""},
	{"line-sep", "line\u2028sep\u2029", `line\u{2028}sep\u{2029}`, ""},
	{"override", "bidi \u202egnp.exe", `bidi \u{202e}gnp.exe`, ""},
	{"embedding", "\u202a\u202b\u202c\u202d", `\u{202a}\u{202b}\u{202c}\u{202d}`, ""},
	{"isolate", "isolate \u2066x\u2069", `isolate \u{2066}x\u{2069}`, ""},
	{"bom", "bom\ufeff", `bom\u{feff}`, ""},
	{"invalid", "bad \xff\xfe utf8", `bad \xff\xfe utf8`, ""},
	{"truncated", "cut \xe2\x80", `cut \xe2\x80`, ""},
	{"replacement-kept", "\ufffd", "\ufffd", ""},
	{"nul", "a\x00b", `a\x00b`, ""},
}

func TestString(t *testing.T) {
	t.Parallel()
	for _, tc := range escapeTests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text := tc.text
			if text == "" {
				text = tc.want
			}
			if got := String(tc.in, Line); got != tc.want {
				t.Errorf("String(%q, Line) = %q; want %q", tc.in, got, tc.want)
			}
			if got := String(tc.in, Text); got != text {
				t.Errorf("String(%q, Text) = %q; want %q", tc.in, got, text)
			}
			if got := Bytes([]byte(tc.in), Line); string(got) != tc.want {
				t.Errorf("Bytes(%q, Line) = %q; want %q", tc.in, got, tc.want)
			}
			if got := Bytes([]byte(tc.in), Text); string(got) != text {
				t.Errorf("Bytes(%q, Text) = %q; want %q", tc.in, got, text)
			}
		})
	}
}

// terminalActs is the test's own copy of the rune table, written out so
// that a rune dropped from unsafeRune fails FuzzString.
func terminalActs(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) ||
		r == 0x061c || r == 0x200e || r == 0x200f || r == 0x2028 || r == 0x2029 ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0xfeff
}

// FuzzString: whatever goes in, nothing a terminal acts on comes out (but
// newline and tab in Text mode), the output is valid UTF-8, and escaping
// it again changes nothing.
func FuzzString(f *testing.F) {
	for _, tc := range escapeTests {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, m := range []Mode{Line, Text} {
			out := String(s, m)
			if !utf8.ValidString(out) {
				t.Fatalf("String(%q, %d) = %q is not valid UTF-8", s, m, out)
			}
			for _, r := range out {
				if m == Text && (r == '\n' || r == '\t') {
					continue
				}
				if terminalActs(r) {
					t.Fatalf("String(%q, %d) = %q holds %U", s, m, out, r)
				}
			}
			if again := String(out, m); again != out {
				t.Fatalf("String(String(%q, %d)) = %q; want %q", s, m, again, out)
			}
			if b := Bytes([]byte(s), m); string(b) != out {
				t.Fatalf("Bytes(%q, %d) = %q; String gave %q", s, m, b, out)
			}
		}
	})
}

// TestFuzzSeedCorpus keeps testdata/fuzz/FuzzString/seed-* equal to
// escapeTests, so that `go test` runs the committed corpus. Files the
// fuzzer adds (named by hash) are left alone. Regenerate with
//
//	go test ./internal/termesc -run TestFuzzSeedCorpus -update
func TestFuzzSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzString")
	want := map[string][]byte{}
	for _, tc := range escapeTests {
		want["seed-"+tc.name] = fmt.Appendf(nil, "go test fuzz v1\nstring(%q)\n", tc.in)
	}
	checkCorpus(t, dir, want, *update, "go test ./internal/termesc -run TestFuzzSeedCorpus -update")
}

func checkCorpus(t *testing.T, dir string, want map[string][]byte, update bool, regen string) {
	t.Helper()
	if update {
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
			t.Errorf("%s: stale seed (regenerate: %s)", f, regen)
		}
	}
	for file, data := range want {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s/%s is missing or differs (regenerate: %s)", dir, file, regen)
		}
	}
}
