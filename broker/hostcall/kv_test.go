package hostcall

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func openKV(t testing.TB, q Quotas) (*KV, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kv.db")
	kv, err := Open(path, q)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kv.Close() })
	return kv, path
}

// checkStore runs bbolt's consistency check and compares every skill's
// usage record with its data.
func checkStore(t testing.TB, kv *KV) {
	t.Helper()
	err := kv.db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return tx.Bucket(bucketSkills).ForEach(func(id, _ []byte) error {
			skill := tx.Bucket(bucketSkills).Bucket(id)
			var want usage
			if err := skill.Bucket(bucketData).ForEach(func(k, v []byte) error {
				want.bytes += uint64(len(k) + len(v))
				want.keys++
				return nil
			}); err != nil {
				return err
			}
			got, err := readUsage(skill)
			if err != nil {
				return err
			}
			if got != want || want.keys == 0 {
				return fmt.Errorf("skill %s: usage %+v, data %+v", id, got, want)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestKVIsolation(t *testing.T) {
	t.Parallel()
	kv, _ := openKV(t, Quotas{})
	ctx := context.Background()
	if err := kv.Put(ctx, "acme.alpha", []byte("token"), []byte("alpha's")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Put(ctx, "acme.beta", []byte("other"), []byte("beta's")); err != nil {
		t.Fatal(err)
	}
	// beta cannot read, list, overwrite or delete alpha's key.
	if v, err := kv.Get(ctx, "acme.beta", []byte("token")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("beta read alpha's key: %q, %v", v, err)
	}
	keys, err := kv.List(ctx, "acme.beta", nil)
	if err != nil || len(keys) != 1 || string(keys[0]) != "other" {
		t.Fatalf("beta lists %q, %v", keys, err)
	}
	if err := kv.Put(ctx, "acme.beta", []byte("token"), []byte("beta's")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "acme.beta", []byte("token")); err != nil {
		t.Fatal(err)
	}
	if v, err := kv.Get(ctx, "acme.alpha", []byte("token")); err != nil || string(v) != "alpha's" {
		t.Fatalf("alpha's key after beta's writes: %q, %v", v, err)
	}
	// Ids that look like paths or prefixes of others are other ids, or
	// refused.
	for _, id := range []string{"acme", "acme.alph", "acme.alpha.", "", "acme/alpha", "ACME.ALPHA", "acme.alpha\x00", "../acme.alpha", strings.Repeat("a", 129)} {
		v, err := kv.Get(ctx, id, []byte("token"))
		if err == nil {
			t.Errorf("skill id %q read alpha's key: %q", id, v)
		}
	}
	checkStore(t, kv)
}

func TestKVOperations(t *testing.T) {
	t.Parallel()
	kv, _ := openKV(t, Quotas{})
	ctx := context.Background()
	const id = "acme.ops"
	if _, err := kv.Get(ctx, id, []byte("absent")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of an absent key: %v", err)
	}
	if err := kv.Delete(ctx, id, []byte("absent")); err != nil {
		t.Fatalf("Delete of an absent key: %v", err)
	}
	for _, k := range []string{"b/2", "a/1", "b/1", "c", "b/3"} {
		if err := kv.Put(ctx, id, []byte(k), []byte("v-"+k)); err != nil {
			t.Fatal(err)
		}
	}
	// An empty value is a value.
	if err := kv.Put(ctx, id, []byte("empty"), nil); err != nil {
		t.Fatal(err)
	}
	if v, err := kv.Get(ctx, id, []byte("empty")); err != nil || len(v) != 0 {
		t.Fatalf("empty value: %q, %v", v, err)
	}
	keys, err := kv.List(ctx, id, []byte("b/"))
	if err != nil || fmt.Sprintf("%s", keys) != "[b/1 b/2 b/3]" {
		t.Fatalf("List b/ = %s, %v", keys, err)
	}
	all, err := kv.List(ctx, id, nil)
	if err != nil || len(all) != 6 {
		t.Fatalf("List = %s, %v", all, err)
	}
	// The caller's slices are its own: neither changes the store.
	val := []byte("original")
	if err := kv.Put(ctx, id, []byte("k"), val); err != nil {
		t.Fatal(err)
	}
	copy(val, "CHANGED!")
	got, _ := kv.Get(ctx, id, []byte("k"))
	copy(got, "changed2")
	if again, _ := kv.Get(ctx, id, []byte("k")); string(again) != "original" {
		t.Fatalf("value %q", again)
	}
	if err := kv.Delete(ctx, id, []byte("b/2")); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, id, []byte("b/2")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a deleted key: %v", err)
	}
	checkStore(t, kv)
	// Deleting everything removes the namespace.
	keys, _ = kv.List(ctx, id, nil)
	for _, k := range keys {
		if err := kv.Delete(ctx, id, k); err != nil {
			t.Fatal(err)
		}
	}
	if b, n, err := kv.Usage(ctx, id); b != 0 || n != 0 || err != nil {
		t.Fatalf("usage after deleting all: %d %d %v", b, n, err)
	}
	checkStore(t, kv)
}

func TestKVQuotas(t *testing.T) {
	t.Parallel()
	q := Quotas{MaxKeyBytes: 8, MaxValueBytes: 16, MaxSkillBytes: 100, MaxSkillKeys: 5, MaxListKeys: 3}
	kv, _ := openKV(t, q)
	ctx := context.Background()
	const id = "acme.quota"
	tests := []struct {
		name       string
		key, value string
		want       error
	}{
		{"key at the cap", "12345678", "v", nil},
		{"key over the cap", "123456789", "v", ErrQuota},
		{"empty key", "", "v", ErrInvalid},
		{"key not UTF-8", "a\xffb", "v", ErrInvalid},
		{"key with NUL", "a\x00b", "v", ErrInvalid},
		{"value at the cap", "v16", strings.Repeat("x", 16), nil},
		{"value over the cap", "v17", strings.Repeat("x", 17), ErrQuota},
	}
	for _, tt := range tests {
		err := kv.Put(ctx, id, []byte(tt.key), []byte(tt.value))
		if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
			t.Errorf("%s: Put = %v, want %v", tt.name, err, tt.want)
		}
	}
	// Usage now: "12345678"+"v" (9) and "v16"+16 (19): 28 bytes, 2 keys.
	if b, n, _ := kv.Usage(ctx, id); b != 28 || n != 2 {
		t.Fatalf("usage %d bytes %d keys, want 28 and 2", b, n)
	}
	// Total bytes: 4 more keys of 2+16 bytes would be 100; the keys cap
	// (5) stops the fourth first.
	for i := range 3 {
		if err := kv.Put(ctx, id, fmt.Appendf(nil, "k%d", i), bytes.Repeat([]byte{'x'}, 16)); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Put(ctx, id, []byte("k3"), []byte("x")); !errors.Is(err, ErrQuota) {
		t.Fatalf("a sixth key: %v, want ErrQuota", err)
	}
	// Replacing a value counts only the new size: 82 bytes now, so a
	// 16-byte value in place of "v" (9 → 24 bytes) makes 97.
	if err := kv.Put(ctx, id, []byte("12345678"), bytes.Repeat([]byte{'y'}, 16)); err != nil {
		t.Fatalf("replacing within the byte quota: %v", err)
	}
	if err := kv.Delete(ctx, id, []byte("k0")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Put(ctx, id, []byte("big"), bytes.Repeat([]byte{'z'}, 16)); err != nil {
		t.Fatalf("after a delete freed room: %v", err)
	}
	// 98 bytes in 5 keys; without k1, 80 in 4: a fifth key of 8+16
	// bytes would make 104.
	if err := kv.Delete(ctx, id, []byte("k1")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Put(ctx, id, []byte("abcdefgh"), bytes.Repeat([]byte{'z'}, 16)); !errors.Is(err, ErrQuota) || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("over the byte quota: %v, want ErrQuota", err)
	}
	if b, n, _ := kv.Usage(ctx, id); b != 80 || n != 4 {
		t.Fatalf("a refused write changed the usage: %d bytes %d keys", b, n)
	}
	// Another skill has its own quota.
	if err := kv.Put(ctx, "acme.other", []byte("k"), []byte("v")); err != nil {
		t.Fatalf("another skill: %v", err)
	}
	// List: 4 keys match "" (cap 3); one matches "k".
	if _, err := kv.List(ctx, id, nil); !errors.Is(err, ErrQuota) {
		t.Fatalf("List over the cap: %v", err)
	}
	if keys, err := kv.List(ctx, id, []byte("k")); err != nil || len(keys) != 1 {
		t.Fatalf("List k = %q, %v", keys, err)
	}
	if _, err := kv.List(ctx, id, []byte("123456789")); !errors.Is(err, ErrQuota) {
		t.Fatalf("a prefix over the key cap: %v", err)
	}
	checkStore(t, kv)

	for _, bad := range []Quotas{{MaxKeyBytes: -1}, {MaxKeyBytes: 5000}, {MaxValueBytes: 17 << 20}, {MaxSkillBytes: -5}} {
		if _, err := Open(filepath.Join(t.TempDir(), "kv.db"), bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("Open with %+v: %v", bad, err)
		}
	}
}

func TestKVDefaultQuotas(t *testing.T) {
	t.Parallel()
	kv, _ := openKV(t, Quotas{})
	want := Quotas{MaxKeyBytes: 256, MaxValueBytes: 64 << 10, MaxSkillBytes: 10 << 20, MaxSkillKeys: 10_000, MaxListKeys: 1_000}
	if kv.Quotas() != want {
		t.Fatalf("quotas %+v", kv.Quotas())
	}
	ctx := context.Background()
	if err := kv.Put(ctx, "acme.d", bytes.Repeat([]byte{'k'}, 257), nil); !errors.Is(err, ErrQuota) {
		t.Fatalf("a 257-byte key: %v", err)
	}
	if err := kv.Put(ctx, "acme.d", []byte("k"), make([]byte, 64<<10+1)); !errors.Is(err, ErrQuota) {
		t.Fatalf("a value over 64 KiB: %v", err)
	}
}

func TestKVPersistence(t *testing.T) {
	t.Parallel()
	kv, path := openKV(t, Quotas{})
	ctx := context.Background()
	if err := kv.Put(ctx, "acme.p", []byte("k"), []byte("kept")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, "acme.p", []byte("k")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Get after Close: %v", err)
	}
	if err := kv.Put(ctx, "acme.p", []byte("k"), nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Put after Close: %v", err)
	}
	again, err := Open(path, Quotas{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if v, err := again.Get(ctx, "acme.p", []byte("k")); err != nil || string(v) != "kept" {
		t.Fatalf("after reopening: %q, %v", v, err)
	}
	if b, n, _ := again.Usage(ctx, "acme.p"); b != 5 || n != 1 {
		t.Fatalf("usage after reopening: %d %d", b, n)
	}
}

func TestKVOpenRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A second opener while the first holds the lock.
	kv, path := openKV(t, Quotas{})
	if _, err := Open(path, Quotas{}); err == nil {
		t.Fatal("a second Open of a store in use succeeded")
	}
	kv.Close()

	// A symbolic link to a store.
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if kv, err := Open(link, Quotas{}); err == nil {
		kv.Close()
		t.Fatal("opened a store through a symbolic link")
	}

	// A store others may read.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if kv, err := Open(path, Quotas{}); err == nil {
		kv.Close()
		t.Fatal("opened a store with mode 0644")
	}

	// A bbolt file of something else.
	other := filepath.Join(dir, "other.db")
	db, err := bolt.Open(other, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("foreign")); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if kv, err := Open(other, Quotas{}); err == nil {
		kv.Close()
		t.Fatal("opened a foreign bbolt file")
	}

	// Not a bbolt file at all.
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, bytes.Repeat([]byte("junk"), 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	if kv, err := Open(junk, Quotas{}); err == nil {
		kv.Close()
		t.Fatal("opened a file of junk")
	}
}

func TestKVContext(t *testing.T) {
	t.Parallel()
	kv, _ := openKV(t, Quotas{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := kv.Put(ctx, "acme.c", []byte("k"), []byte("v")); !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a done context: %v", err)
	}
}

// TestKVConcurrentWriters: goroutines writing to two skills, some to the
// same keys, leave a store whose usage matches its data.
func TestKVConcurrentWriters(t *testing.T) {
	t.Parallel()
	kv, _ := openKV(t, Quotas{MaxSkillKeys: 100})
	ctx := context.Background()
	const writers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			id := []string{"acme.even", "acme.odd"}[w%2]
			for i := range each {
				// Half the keys are shared by the writers of a skill.
				key := fmt.Appendf(nil, "w%d-%d", w, i)
				if i%2 == 0 {
					key = fmt.Appendf(nil, "shared-%d", i)
				}
				if err := kv.Put(ctx, id, key, bytes.Repeat([]byte{byte(w)}, 100+i)); err != nil {
					errs <- err
				}
				if i%5 == 4 {
					if err := kv.Delete(ctx, id, key); err != nil {
						errs <- err
					}
				}
				if _, err := kv.List(ctx, id, []byte("shared-")); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	checkStore(t, kv)
	for _, id := range []string{"acme.even", "acme.odd"} {
		keys, err := kv.List(ctx, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, n, _ := kv.Usage(ctx, id)
		if n != len(keys) {
			t.Fatalf("%s: usage says %d keys, List %d", id, n, len(keys))
		}
		for _, k := range keys {
			v, err := kv.Get(ctx, id, k)
			if err != nil {
				t.Fatal(err)
			}
			// Every value is one writer's whole value.
			if len(v) < 100 || !bytes.Equal(v, bytes.Repeat(v[:1], len(v))) {
				t.Fatalf("%s %s: a mixed value", id, k)
			}
		}
	}
}

// BenchmarkKVPut reports what one durable write costs (an fsync).
func BenchmarkKVPut(b *testing.B) {
	kv, _ := openKV(b, Quotas{MaxSkillKeys: 1 << 30, MaxSkillBytes: 1 << 40})
	ctx := context.Background()
	v := make([]byte, 1024)
	i := 0
	for b.Loop() {
		if err := kv.Put(ctx, "acme.bench", fmt.Appendf(nil, "k%d", i%1000), v); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
