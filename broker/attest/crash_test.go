package attest

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// crashDirEnv names the directory of the child of TestKillWhileAppending;
// the child runs only when it is set.
const crashDirEnv = "STOCKADE_ATTEST_CRASH_DIR"

// TestKillWhileAppending kills a process that appends in a loop with
// SIGKILL at random moments, five times over one log. After each kill the
// log reopens (cutting a torn record if the kill left one), every record
// the child was told was written is there, and the whole log verifies.
// Small files make kills land around rotations too, and every fifth record
// is large so that kills land inside writes.
func TestKillWhileAppending(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills child processes")
	}
	dir := t.TempDir()
	k, _, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	logDir := dir + "/" + LogDirName
	recovered := 0
	for round := range 5 {
		acked := runAndKill(t, dir, 20+rand.IntN(150))
		l, err := OpenLog(logDir, k, Options{MaxFileSize: 8 << 10})
		if err != nil {
			t.Fatalf("round %d: reopening after the kill: %v", round, err)
		}
		if l.Recovered() != nil {
			recovered++
		}
		head := l.Head()
		l.Close()
		if head.Seq < acked {
			t.Fatalf("round %d: the child was told seq %d was written; the log ends at %d", round, acked, head.Seq)
		}
		files, err := LogFiles(logDir)
		if err != nil {
			t.Fatal(err)
		}
		n, err := Verify(files, k.Public())
		if err != nil || uint64(n) != head.Seq {
			t.Fatalf("round %d: %d records, head %d: %v", round, n, head.Seq, err)
		}
		t.Logf("round %d: killed after seq %d acknowledged; %d records in %d files", round, acked, n, len(files))
	}
	t.Logf("%d of 5 kills left a torn record", recovered)
}

// runAndKill starts the child on dir, lets it acknowledge `after` appends,
// kills it with SIGKILL a random moment later, and returns the last seq
// it acknowledged.
func runAndKill(t *testing.T, dir string, after int) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked uint64
	sc := bufio.NewScanner(out)
	seen := 0
	for sc.Scan() {
		s, ok := strings.CutPrefix(sc.Text(), "acked ")
		if !ok {
			t.Logf("child: %s", sc.Text())
			continue
		}
		acked, _ = strconv.ParseUint(s, 10, 64)
		if seen++; seen == after {
			time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond)
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Anything acknowledged after the break counts too.
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
			acked, _ = strconv.ParseUint(s, 10, 64)
		}
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
		t.Fatalf("the child was not killed: %v", err)
	}
	return acked
}

// TestCrashChild is the child of TestKillWhileAppending: it appends until
// it is killed, printing each acknowledged seq.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the child of TestKillWhileAppending")
	}
	k, _, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenLog(dir+"/"+LogDirName, k, Options{MaxFileSize: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(os.Stdout)
	big := make([]string, 25)
	for i := range big {
		big[i] = strings.Repeat(strconv.Itoa(i), 1000)
	}
	for i := 0; ; i++ {
		r := allowRecord(i)
		if i%5 == 4 {
			r.Policies = big
		}
		s, err := l.Append(r)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "acked %d\n", s.Record.Seq)
		w.Flush()
	}
}
