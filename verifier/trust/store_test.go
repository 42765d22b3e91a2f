package trust

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func readLog(t testing.TB, dir string) *auditLog {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, auditName))
	if err != nil {
		t.Fatal(err)
	}
	l, err := parseAudit(data)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// populate brings a store to one release in each state but revoked.
func populate(t testing.TB, s *Store) {
	t.Helper()
	v1 := build(t, release{})
	v2 := build(t, release{version: "1.1.0", sequence: "2"})
	v3 := build(t, release{version: "1.2.0", sequence: "3", http: `["more.example.com"]`})
	mustAdmit(t, s, v1)
	mustPromote(t, s, v1)
	mustAdmit(t, s, v2)
	mustPromote(t, s, v2)
	mustAdmit(t, s, v3)
	mustAdmit(t, s, build(t, release{key: strangerKey, version: "1.3.0", sequence: "4"}))
	if err := s.Disable("stockade.hello"); err != nil {
		t.Fatal(err)
	}
}

func TestReopenKeepsState(t *testing.T) {
	t.Parallel()
	s, dir := newStore(t, Options{})
	populate(t, s)
	revoked := build(t, release{version: "0.1.0", sequence: "1", desc: "Revoked before seen."})
	if err := s.RevokeRelease(revoked.StatementDigest); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeKey(fingerprint(testKey("gone"))); err != nil {
		t.Fatal(err)
	}
	before := fmt.Sprint(s.List())
	s.Close()
	if _, err := s.Active("stockade.hello"); err == nil {
		t.Fatal("a closed store answered")
	}

	s = openStore(t, dir, Options{})
	if after := fmt.Sprint(s.List()); after != before {
		t.Fatalf("releases changed on reopen:\n%s\n%s", before, after)
	}
	_, err := s.Active("stockade.hello")
	wantReason(t, err, ReasonDisabled)
	wantReason(t, s.Accept(fingerprint(testKey("gone"))), ReasonKeyRevoked)
	_, err = s.Admit(revoked, nil)
	wantReason(t, err, ReasonRevoked)
	if err := s.AuditVerify(); err != nil {
		t.Fatal(err)
	}
	// Modes on disk.
	for name, want := range map[string]os.FileMode{".": 0o700, stateName: 0o600, auditName: 0o600, lockName: 0o600} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode().Perm(), want)
		}
	}
}

func TestOpenRefusesUnsafe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		attack func(t *testing.T, dir string)
		want   Reason
	}{
		{"dir writable by others", func(t *testing.T, dir string) { must(t, os.Chmod(dir, 0o777)) }, ReasonStoreUnsafe},
		{"dir writable by group", func(t *testing.T, dir string) { must(t, os.Chmod(dir, 0o770)) }, ReasonStoreUnsafe},
		{"state writable by others", func(t *testing.T, dir string) { must(t, os.Chmod(filepath.Join(dir, stateName), 0o666)) }, ReasonStoreUnsafe},
		{"log writable by group", func(t *testing.T, dir string) { must(t, os.Chmod(filepath.Join(dir, auditName), 0o620)) }, ReasonStoreUnsafe},
		{"state is a symlink", func(t *testing.T, dir string) {
			p := filepath.Join(dir, stateName)
			must(t, os.Rename(p, p+".real"))
			must(t, os.Symlink(stateName+".real", p))
		}, ReasonStoreUnsafe},
		{"state is hard-linked", func(t *testing.T, dir string) {
			must(t, os.Link(filepath.Join(dir, stateName), filepath.Join(t.TempDir(), "copy")))
		}, ReasonStoreUnsafe},
		{"dir is a symlink", func(t *testing.T, dir string) {
			must(t, os.Rename(dir, dir+".real"))
			must(t, os.Symlink(dir+".real", dir))
		}, ReasonStoreUnsafe},
		{"unexpected file", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "state.json.bak"), nil, 0o600))
		}, ReasonStoreUnsafe},
		{"state owned by another uid", func(t *testing.T, dir string) {
			if os.Getuid() != 0 {
				t.Skip("chown needs root")
			}
			must(t, os.Chown(filepath.Join(dir, stateName), 12345, 12345))
		}, ReasonStoreUnsafe},
		{"dir owned by another uid", func(t *testing.T, dir string) {
			if os.Getuid() != 0 {
				t.Skip("chown needs root")
			}
			must(t, os.Chown(dir, 12345, 12345))
		}, ReasonStoreUnsafe},
		{"state garbage", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, stateName), []byte(`{"format":1}`), 0o600))
		}, ReasonStoreCorrupt},
		{"state with unknown member", func(t *testing.T, dir string) {
			p := filepath.Join(dir, stateName)
			b, err := os.ReadFile(p)
			must(t, err)
			must(t, os.WriteFile(p, bytes.Replace(b, []byte(`"format"`), []byte(`"trusted":true,"format"`), 1), 0o600))
		}, ReasonStoreCorrupt},
		{"two active releases", func(t *testing.T, dir string) {
			p := filepath.Join(dir, stateName)
			b, err := os.ReadFile(p)
			must(t, err)
			must(t, os.WriteFile(p, bytes.ReplaceAll(b, []byte(`"superseded"`), []byte(`"active"`)), 0o600))
		}, ReasonStoreCorrupt},
		{"log truncated", func(t *testing.T, dir string) {
			p := filepath.Join(dir, auditName)
			b, err := os.ReadFile(p)
			must(t, err)
			cut := bytes.LastIndexByte(b[:len(b)-1], '\n') + 1
			must(t, os.WriteFile(p, b[:cut], 0o600))
		}, ReasonStoreCorrupt},
		{"log line edited", func(t *testing.T, dir string) {
			p := filepath.Join(dir, auditName)
			b, err := os.ReadFile(p)
			must(t, err)
			must(t, os.WriteFile(p, bytes.Replace(b, []byte(`"decision":"quarantined"`), []byte(`"decision":"active"`), 1), 0o600))
		}, ReasonAuditChain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, dir := newStore(t, Options{})
			populate(t, s)
			s.Close()
			tt.attack(t, dir)
			_, err := Open(dir, Options{})
			wantReason(t, err, tt.want)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenLocked(t *testing.T) {
	t.Parallel()
	_, dir := newStore(t, Options{})
	_, err := Open(dir, Options{})
	wantReason(t, err, ReasonStoreLocked)
}

// TestAuditTamper edits the log under an open store: AuditVerify notices.
func TestAuditTamper(t *testing.T) {
	t.Parallel()
	edits := map[string]func([]byte) []byte{
		"a byte in the middle": func(b []byte) []byte {
			i := bytes.Index(b, []byte(`"new_skill"`))
			b[i+1] = 'N'
			return b
		},
		"last line dropped": func(b []byte) []byte {
			return b[:bytes.LastIndexByte(b[:len(b)-1], '\n')+1]
		},
		"last line edited": func(b []byte) []byte {
			i := bytes.LastIndex(b, []byte(`"decision":"done"`))
			return append(b[:i:i], append([]byte(`"decision":"oops"`), b[i+len(`"decision":"done"`):]...)...)
		},
		"first line dropped": func(b []byte) []byte { return b[bytes.IndexByte(b, '\n')+1:] },
		"line appended": func(b []byte) []byte {
			return append(b, []byte(`{"n":99}`+"\n")...)
		},
		"torn tail": func(b []byte) []byte { return append(b, `{"n":`...) },
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, dir := newStore(t, Options{})
			populate(t, s)
			if err := s.AuditVerify(); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, auditName)
			b, err := os.ReadFile(p)
			must(t, err)
			must(t, os.WriteFile(p, edit(b), 0o600))
			wantReason(t, s.AuditVerify(), ReasonAuditChain)
		})
	}
}

// TestRecoverLeftovers: what a crash can leave (a temporary state file,
// a torn audit line, a record whose decision never reached the state) is
// cleaned up on Open and recorded.
func TestRecoverLeftovers(t *testing.T) {
	t.Parallel()
	s, dir := newStore(t, Options{})
	populate(t, s)
	before := fmt.Sprint(s.List())
	count := s.count
	// A decision logged but never applied: commit's first half.
	line := marshalRecord(&AuditRecord{N: count + 1, Prev: s.head, Event: eventPromote, Decision: decisionDone, ID: "stockade.hello"})
	s.Close()
	f, err := os.OpenFile(filepath.Join(dir, auditName), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.Write(append(append(line, '\n'), `{"n":`...)) // and a torn line after it
	must(t, err)
	f.Close()
	must(t, os.WriteFile(filepath.Join(dir, tempPrefix+stateName+".0123"), []byte(`{"half`), 0o600))

	s = openStore(t, dir, Options{})
	if after := fmt.Sprint(s.List()); after != before {
		t.Fatalf("state changed:\n%s\n%s", before, after)
	}
	if _, err := os.Stat(filepath.Join(dir, tempPrefix+stateName+".0123")); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
	if err := s.AuditVerify(); err != nil {
		t.Fatal(err)
	}
	l := readLog(t, dir)
	last := l.records[len(l.records)-1]
	if last.Event != eventRecover || len(last.Details) != 2 ||
		!strings.Contains(last.Details[0], "torn") || !strings.Contains(last.Details[1], fmt.Sprint(count+1)) {
		t.Fatalf("recover record: %+v", last)
	}
}

// TestCrash kills a process writing to the store at random moments, then
// opens the store: it must open, verify, and hold a consistent state.
func TestCrash(t *testing.T) {
	if dir := os.Getenv("STOCKADE_TRUST_CRASH_DIR"); dir != "" {
		crashChild(t, dir)
		return
	}
	dir := filepath.Join(t.TempDir(), "trust")
	for i, delay := range []time.Duration{30, 80, 150, 220, 300} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$")
		cmd.Env = append(os.Environ(), "STOCKADE_TRUST_CRASH_DIR="+dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		must(t, cmd.Start())
		time.Sleep(delay * time.Millisecond)
		must(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
		s, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("round %d: Open after kill: %v\n%s", i, err, out.String())
		}
		if err := s.AuditVerify(); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		active := 0
		for _, r := range s.List() {
			if r.State == StateActive {
				active++
			}
		}
		if active > 1 {
			t.Fatalf("round %d: %d active releases", i, active)
		}
		recovered := 0
		for _, r := range readLog(t, dir).records {
			if r.Event == eventRecover {
				recovered++
			}
		}
		t.Logf("round %d: %d releases, %d audit records, %d recoveries so far", i, len(s.List()), s.count, recovered)
		s.Close()
	}
}

// crashChild writes to the store until killed.
func crashChild(t *testing.T, dir string) {
	s, err := Open(dir, Options{AutoActivate: true})
	if err != nil {
		t.Fatal(err)
	}
	seq := uint64(1)
	for _, r := range s.List() {
		seq = max(seq, r.Sequence+1)
	}
	for ; ; seq++ {
		sk := build(t, release{version: fmt.Sprintf("1.%d.0", seq), sequence: fmt.Sprint(seq)})
		if _, err := s.Admit(sk, nil); err != nil {
			t.Fatal(err)
		}
		if seq == 1 {
			mustPromote(t, s, sk)
		}
		s.Disable("stockade.hello")
		s.Enable("stockade.hello")
	}
}
