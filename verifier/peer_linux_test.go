//go:build linux

package verifier

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stockade-dev/stockade/verifier/admin"
)

const peerSocketEnv = "STOCKADE_TEST_ADMIN_PEER_SOCKET"

// TestAdminPeers runs admin clients under other uids and groups (a copy of
// the test binary, setuid by the kernel through SysProcAttr.Credential) and
// checks what admin.sock says to each: a uid that is neither listed nor in
// an admin group is refused; a member of an admin group is admitted,
// whether the group is supplementary (SO_PEERGROUPS) or primary
// (SO_PEERCRED's gid).
func TestAdminPeers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run clients under other uids")
	}
	const adminGID = 4242
	e := newEnv(t, Config{AdminUIDs: []uint32{0}, AdminGIDs: []uint32{adminGID}})
	if err := os.Chmod(filepath.Dir(e.sock), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(e.sock, 0o777); err != nil {
		t.Fatal(err)
	}
	bin := copyTestBinary(t)
	for _, c := range []struct {
		name     string
		uid, gid uint32
		groups   []uint32
		want     string
	}{
		{"stranger", 4243, 4243, nil, "denied"},
		{"stranger with other groups", 4243, 4243, []uint32{4244, 4245}, "denied"},
		{"supplementary admin group", 4243, 4243, []uint32{4244, adminGID}, "ok"},
		{"primary admin group", 4246, adminGID, nil, "ok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, "-test.run=^TestAdminPeerHelper$")
			cmd.Env = []string{peerSocketEnv + "=" + e.sock}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: c.uid, Gid: c.gid, Groups: c.groups}}
			out, err := cmd.CombinedOutput()
			got := ""
			for _, line := range strings.Split(string(out), "\n") {
				if v, ok := strings.CutPrefix(line, "peer-result: "); ok {
					got = v
				}
			}
			if got != c.want {
				t.Fatalf("got %q, want %q (%v)\n%s", got, c.want, err, out)
			}
		})
	}
}

// TestAdminPeerHelper is the client TestAdminPeers runs under other uids.
func TestAdminPeerHelper(t *testing.T) {
	sock := os.Getenv(peerSocketEnv)
	if sock == "" {
		t.Skip("run by TestAdminPeers")
	}
	c, err := admin.Dial(sock)
	if err == nil {
		_, err = c.List()
		c.Close()
	}
	switch {
	case err == nil:
		fmt.Println("peer-result: ok")
	case admin.ReasonOf(err) != "":
		fmt.Printf("peer-result: %s\n", admin.ReasonOf(err))
	default:
		fmt.Printf("peer-result: error %v\n", err)
	}
}

// copyTestBinary copies the running test binary where other uids can run
// it (go test builds it in a directory only we may enter).
func copyTestBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stkv-bin")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(dir, "verifier.test")
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}
