package hostcall

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Environment of the child of TestKVKillWhileWriting; the child runs only
// when crashPathEnv is set.
const (
	crashPathEnv  = "STOCKADE_HOSTCALL_KV_CRASH_PATH"
	crashStartEnv = "STOCKADE_HOSTCALL_KV_CRASH_START"
)

// crashOp is the i-th operation of the child, the same in every run: a
// put of crashValue(i), or (every fifth) a delete, on one of 37 keys of
// one of two skills.
func crashOp(i int) (skill string, key []byte, del bool) {
	skill = []string{"acme.crash-a", "acme.crash-b"}[i%2]
	return skill, fmt.Appendf(nil, "k%02d", (i/2)%37), i%5 == 4
}

// crashValue is the value of put i: its sequence number, then up to
// 64 KiB of bytes derived from it, so that a value can be checked whole.
func crashValue(i int) []byte {
	n := 8 + (i*7919)%(DefaultMaxValueBytes-8)
	v := make([]byte, n)
	binary.BigEndian.PutUint64(v, uint64(i))
	r := rand.New(rand.NewPCG(uint64(i), 0x5eed))
	for j := 8; j < n; j++ {
		v[j] = byte(r.Uint32())
	}
	return v
}

type crashSlot struct{ skill, key string }

// replay is the state after ops [0, n): the op that last wrote each slot
// (-1 for deleted).
func replay(n int) map[crashSlot]int {
	st := map[crashSlot]int{}
	for i := range n {
		skill, key, del := crashOp(i)
		if del {
			st[crashSlot{skill, string(key)}] = -1
		} else {
			st[crashSlot{skill, string(key)}] = i
		}
	}
	for s, i := range st {
		if i < 0 {
			delete(st, s)
		}
	}
	return st
}

// TestKVKillWhileWriting kills a process that writes to the store in a
// loop (values up to 64 KiB, puts and deletes, two skills) with SIGKILL
// at random moments, five times over one file. After each kill the store
// opens, passes bbolt's consistency check, its usage records match its
// data, every value is a whole value some put wrote, and the state is
// exactly that after the last acknowledged operation, or after the one
// in flight: no acknowledged write is lost, no torn one is seen.
func TestKVKillWhileWriting(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills child processes")
	}
	path := filepath.Join(t.TempDir(), "kv.db")
	next := 0
	for round := range 5 {
		acked := runKVChild(t, path, next, 10+rand.IntN(60))
		kv, err := Open(path, Quotas{})
		if err != nil {
			t.Fatalf("round %d: reopening after the kill: %v", round, err)
		}
		checkStore(t, kv)
		got := map[crashSlot]int{}
		err = kv.db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(bucketSkills).ForEach(func(id, _ []byte) error {
				return tx.Bucket(bucketSkills).Bucket(id).Bucket(bucketData).ForEach(func(k, v []byte) error {
					if len(v) < 8 {
						return fmt.Errorf("%s %s: a value of %d bytes", id, k, len(v))
					}
					i := int(binary.BigEndian.Uint64(v))
					if !bytes.Equal(v, crashValue(i)) {
						return fmt.Errorf("%s %s: not the whole value of put %d", id, k, i)
					}
					got[crashSlot{string(id), string(k)}] = i
					return nil
				})
			})
		})
		kv.Close()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		switch {
		case sameState(got, replay(acked+1)):
			next = acked + 1
		case sameState(got, replay(acked+2)):
			next = acked + 2 // the op in flight committed before the kill
		default:
			t.Fatalf("round %d: the store holds neither the state after op %d nor after op %d", round, acked, acked+1)
		}
		t.Logf("round %d: killed after op %d was acknowledged; the store holds ops up to %d, %d keys", round, acked, next-1, len(got))
	}
}

func sameState(a, b map[crashSlot]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// runKVChild starts the child at op start, lets it acknowledge `after`
// ops, kills it with SIGKILL a random moment later, and returns the last
// op it acknowledged (start-1 if none).
func runKVChild(t *testing.T, path string, start, after int) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestKVCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashPathEnv+"="+path, crashStartEnv+"="+strconv.Itoa(start))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked, seen := start-1, 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		s, ok := strings.CutPrefix(sc.Text(), "acked ")
		if !ok {
			t.Logf("child: %s", sc.Text())
			continue
		}
		acked, _ = strconv.Atoi(s)
		if seen++; seen == after {
			time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
			acked, _ = strconv.Atoi(s)
		}
	}
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 {
		t.Fatalf("the child was not killed: %v", err)
	}
	return acked
}

// TestKVCrashChild is the child of TestKVKillWhileWriting: it performs
// ops from its start until it is killed, printing each acknowledged op.
func TestKVCrashChild(t *testing.T) {
	path := os.Getenv(crashPathEnv)
	if path == "" {
		t.Skip("the child of TestKVKillWhileWriting")
	}
	start, err := strconv.Atoi(os.Getenv(crashStartEnv))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := Open(path, Quotas{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w := bufio.NewWriter(os.Stdout)
	for i := start; ; i++ {
		skill, key, del := crashOp(i)
		if del {
			err = kv.Delete(ctx, skill, key)
		} else {
			err = kv.Put(ctx, skill, key, crashValue(i))
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "acked %d\n", i)
		w.Flush()
	}
}
