package attest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stockade-dev/stockade/ipc"
)

// testKey is a fixed key: seed bytes all equal to b.
func testKey(t testing.TB, b byte) *Key {
	t.Helper()
	k, err := NewKey(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// allowRecord is a Tier C call as the broker records it (Seq, Prev and
// KeyID left for Append).
func allowRecord(i int) Record {
	return Record{
		CallID:    fmt.Sprintf("%024x", i+1),
		RunID:     "run-7",
		Principal: Principal{UID: 1000, Name: "alice"},
		Tool:      "process.run",
		Decision:  Allow,
		Policies:  []string{"permit-tier-c-runs"},
		Tier:      "C",
		Receipt: ipc.Receipt{
			Tier: "C", Backend: "bwrap", LandlockABI: 6,
			Seccomp: "executor-target", SeccompDigest: "3f1c9a",
			Namespaces:   []string{"user", "pid", "ipc", "uts", "mount", "net"},
			BwrapVersion: "0.11.0", Cgroup: "/stockade/call-1",
			Layers: []string{"rlimits", "no_new_privs", "cleared_env", "landlock", "seccomp"},
		},
		Limits: Limits{
			Rlimits:   ipc.Rlimits{CPUSeconds: 10, AddressSpace: 1 << 30, NoFile: 256, NProc: 64, FileSize: 64 << 20, Pids: 64, Memory: 512 << 20},
			TimeoutMS: 30000, MaxOutput: 1 << 20,
		},
		Artifact: Artifact{Kind: ArtifactBinary, Name: "/usr/bin/true", Digest: DigestBytes([]byte("true"))},
		Input:    InputDigest([]string{"/bin/true", fmt.Sprint(i)}, ""),
		Stdout:   DigestBytes(nil),
		Stderr:   DigestBytes(nil),
		Result:   Result{Status: ipc.StatusOK},
		Usage:    Usage{UserMicros: 120, SystemMicros: 340, MaxRSSKiB: 1800},
		Start:    1767225600000000000 + int64(i)*1e9,
		End:      1767225600004000000 + int64(i)*1e9,
	}
}

// denyRecord is a call the policy refused.
func denyRecord(i int) Record {
	return Record{
		CallID:    fmt.Sprintf("%024x", i+1),
		RunID:     "run-7",
		Principal: Principal{UID: 1001, Name: "bob"},
		Tool:      "process.run",
		Decision:  Deny,
		Policies:  []string{"forbid-shells"},
		Tier:      "C",
		Artifact:  Artifact{Kind: ArtifactBinary, Name: "/usr/bin/bash"},
		Input:     InputDigest([]string{"bash", "-c", "id"}, ""),
		Result:    Result{Error: ipc.ClassDenied},
		Start:     1767225600000000000 + int64(i)*1e9,
		End:       1767225600000100000 + int64(i)*1e9,
	}
}

// sealed fills Seq, Prev and KeyID as a log would.
func sealed(r Record, seq uint64, prev Digest, k *Key) Record {
	r.Seq, r.Prev, r.KeyID = seq, prev, k.ID()
	return r
}

// writeLog appends n records (alternately allowed and denied) to a new log
// in dir and closes it.
func writeLog(t testing.TB, dir string, k *Key, n int, maxFile int64) []Signed {
	t.Helper()
	l, err := OpenLog(dir, k, Options{MaxFileSize: maxFile})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out []Signed
	for i := range n {
		r := allowRecord(i)
		if i%3 == 2 {
			r = denyRecord(i)
		}
		s, err := l.Append(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// logFile is a log file split into its header and frames, for tests that
// tamper with logs.
type logFile struct {
	header []byte
	frames [][]byte // each whole: length, record, signature
}

func splitLog(t testing.TB, path string) logFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lf := logFile{header: b[:headerSize]}
	for off := headerSize; off < len(b); {
		n := int(binary.BigEndian.Uint32(b[off:]))
		end := off + frameOverhead + n
		lf.frames = append(lf.frames, b[off:end:end])
		off = end
	}
	return lf
}

func (lf logFile) bytes() []byte {
	b := append([]byte(nil), lf.header...)
	for _, f := range lf.frames {
		b = append(b, f...)
	}
	return b
}

// frameStarts are the offsets of each frame in the file.
func (lf logFile) frameStarts() []int {
	var offs []int
	off := len(lf.header)
	for _, f := range lf.frames {
		offs = append(offs, off)
		off += len(f)
	}
	return offs
}

// readLogDir reads every log file in dir.
func readLogDir(t testing.TB, dir string) (names []string, files [][]byte) {
	t.Helper()
	paths, err := LogFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(p))
		files = append(files, b)
	}
	return names, files
}

// writeLogDir writes log files into a new directory.
func writeLogDir(t testing.TB, names []string, files [][]byte) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	var paths []string
	for i, n := range names {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, files[i], 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return dir, paths
}
