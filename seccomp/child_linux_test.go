package seccomp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// childSpec tells a re-executed test binary what to do (see childEnv).
type childSpec struct {
	Role    string // attacks, programs, goprog, daemon, violate, getpid
	Profile string // the profile to install; "" installs nothing
	Marker  bool   // install the profile with marked errnos (markErrnos)
	Socket  string // daemon: the Unix socket to serve
	State   string // daemon: the state directory
	Attempt string // violate: what to attempt
	N       int    // getpid: iterations
}

// resultPrefix starts the line on which a child reports, in JSON.
const resultPrefix = "@@result "

// markEPERM is an errno the kernel never returns, put in place of EPERM by
// markErrnos: a call that fails with it was refused by our filter, and by
// nothing else. (ENOSYS stays: libc must see it to fall back from clone3.)
const markEPERM = 200

// markErrnos returns a copy of p whose EPERM rules return markEPERM.
func markErrnos(p *Profile) *Profile {
	q := p.Clone()
	for i, r := range q.Rules {
		if r.Action == ActEPERM {
			q.Rules[i].Action = ActErrno(markEPERM)
		}
	}
	return q
}

// childCommand prepares the test binary to run again as a child for test.
func childCommand(ctx context.Context, t testing.TB, test string, spec childSpec) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, exe, "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runChildJSON runs a child to the end, requires a clean exit, and decodes
// its report into v.
func runChildJSON(t testing.TB, test string, spec childSpec, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := childCommand(ctx, t, test, spec)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child %+v: %v\nstdout:\n%s\nstderr:\n%s", spec, err, out, stderr.Bytes())
	}
	if err := parseResult(out, v); err != nil {
		t.Fatalf("child %+v: %v\nstdout:\n%s\nstderr:\n%s", spec, err, out, stderr.Bytes())
	}
}

func parseResult(out []byte, v any) error {
	var line string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), resultPrefix); ok {
			line = s
		}
	}
	if line == "" {
		return errors.New("no result line")
	}
	return json.Unmarshal([]byte(line), v)
}

func report(v any) {
	js, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s%s\n", resultPrefix, js)
}

// runChild is the child's main: decode the spec, play the role, return
// the exit status.
func runChild(specJSON string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		fmt.Fprintln(os.Stderr, "child spec:", err)
		return 2
	}
	roles := map[string]func(childSpec) error{
		"attacks":  childAttacks,
		"programs": childPrograms,
		"goprog":   childGoProgram,
		"daemon":   childDaemon,
		"violate":  childViolate,
		"getpid":   childGetpid,
	}
	role, ok := roles[spec.Role]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown child role", spec.Role)
		return 2
	}
	if err := role(spec); err != nil {
		fmt.Fprintf(os.Stderr, "child %s: %v\n", spec.Role, err)
		return 1
	}
	return 0
}

// installSpec compiles and installs the spec's profile, if any.
func installSpec(spec childSpec) error {
	if spec.Profile == "" {
		return nil
	}
	p, err := Named(spec.Profile)
	if err != nil {
		return err
	}
	if spec.Marker {
		p = markErrnos(p)
	}
	prog, err := p.Compile(NativeArch())
	if err != nil {
		return err
	}
	return Install(prog)
}

// skipUnlessSeccomp skips tests that install filters where the kernel
// cannot take them.
func skipUnlessSeccomp(t testing.TB) {
	t.Helper()
	if _, err := lookupArch(NativeArch()); err != nil {
		t.Skipf("no filters for %s", NativeArch())
	}
	if err := seccompActionAvail(uint32(ActKillProcess)); err != nil {
		t.Skipf("kernel without seccomp filters or SECCOMP_RET_KILL_PROCESS: %v", err)
	}
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped in -short mode")
	}
}

// errnoOf reduces an error to its errno: 0 for success, -1 for an error
// without one.
func errnoOf(err error) int {
	if err == nil {
		return 0
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return int(errno)
	}
	return -1
}

func errnoName(e int) string {
	switch e {
	case 0:
		return "success"
	case -1:
		return "an error without errno"
	case markEPERM:
		return "marked EPERM"
	}
	return fmt.Sprintf("%d (%v)", e, unix.ErrnoName(syscall.Errno(e)))
}

// childGetpid times spec.N getpid system calls, under spec's profile.
func childGetpid(spec childSpec) error {
	if err := installSpec(spec); err != nil {
		return err
	}
	start := time.Now()
	for range spec.N {
		syscall.Getpid()
	}
	report(map[string]int64{"ns": time.Since(start).Nanoseconds()})
	return nil
}

// childViolate installs a daemon profile and makes one call it forbids:
// the process must die of SIGSYS before it can report surviving.
func childViolate(spec childSpec) error {
	if err := installSpec(spec); err != nil {
		return err
	}
	fmt.Println("@@installed")
	var err error
	switch spec.Attempt {
	case "exec":
		err = exec.Command("/bin/true").Run()
	case "socket-inet":
		_, err = unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	case "socket-unix":
		_, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	case "connect":
		err = unix.Connect(0, &unix.SockaddrUnix{Name: "/nonexistent-stockade-test.sock"})
	case "socket-netlink":
		_, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, 0)
	case "ptrace":
		_, _, e := unix.Syscall(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0)
		if e != 0 {
			err = e
		}
	case "mount":
		err = unix.Mount("none", "/nonexistent-stockade-test", "tmpfs", 0, "")
	default:
		return fmt.Errorf("unknown attempt %q", spec.Attempt)
	}
	fmt.Println("@@survived", err)
	return nil
}
