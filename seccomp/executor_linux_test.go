package seccomp

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// sys makes a raw system call and returns its errno, or nil.
func sys(trap uintptr, args ...uintptr) error {
	var a [6]uintptr
	copy(a[:], args)
	_, _, e := unix.Syscall6(trap, a[0], a[1], a[2], a[3], a[4], a[5])
	if e != 0 {
		return e
	}
	return nil
}

// openPTY opens a pseudo-terminal pair and returns the terminal side.
func openPTY() (master, tty int, err error) {
	master, err = unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, -1, err
	}
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		return -1, -1, err
	}
	n, err := unix.IoctlGetInt(master, unix.TIOCGPTN)
	if err != nil {
		return -1, -1, err
	}
	tty, err = unix.Open(fmt.Sprintf("/dev/pts/%d", n), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	return master, tty, err
}

func closeIfFD(fd int, err error) error {
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// attackEnv is what the attacks act on: a terminal, and a scratch
// directory of the child's own holding an ordinary file (attackFile, 0644).
type attackEnv struct {
	tty int
	dir string
}

const attackFile = "f"

func (e attackEnv) file() string { return filepath.Join(e.dir, attackFile) }

// An attack is one call the executor profiles refuse. Each is harmless
// when it gets through: it fails on its arguments (a missing path, a bad
// descriptor), or acts on this throwaway child only. Every one of them
// gets an answer other than EPERM (ENOSYS for clone3 and openat2) without
// the filter.
type attack struct {
	name      string
	nonetOnly bool          // refused by executor-nonet only
	want      syscall.Errno // EPERM, or ENOSYS for clone3 and openat2
	run       func(e attackEnv) error
}

const (
	noSuchPath      = "/nonexistent-stockade-seccomp-test"
	oldThreadAttack = "mount, from a thread started before Install"
	setIDLeft       = "files with a setuid or setgid bit after the attacks"
)

var attacks = []attack{
	{name: "ptrace(PTRACE_SEIZE, parent)", want: unix.EPERM, run: func(attackEnv) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := unix.PtraceSeize(os.Getppid())
		if err == nil {
			unix.PtraceDetach(os.Getppid())
		}
		return err
	}},
	{name: "process_vm_readv(parent)", want: unix.EPERM, run: func(attackEnv) error {
		return sys(unix.SYS_PROCESS_VM_READV, uintptr(os.Getppid()), 0, 0, 0, 0, 0)
	}},
	{name: "mount", want: unix.EPERM, run: func(attackEnv) error {
		return unix.Mount("none", noSuchPath, "tmpfs", 0, "")
	}},
	{name: "umount2", want: unix.EPERM, run: func(attackEnv) error { return unix.Unmount(noSuchPath, 0) }},
	{name: "unshare(CLONE_NEWUSER)", want: unix.EPERM, run: func(attackEnv) error { return unix.Unshare(unix.CLONE_NEWUSER) }},
	{name: "clone(CLONE_NEWUSER) by os/exec", want: unix.EPERM, run: func(attackEnv) error {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWUSER}
		return cmd.Run()
	}},
	{name: "clone3", want: unix.ENOSYS, run: func(attackEnv) error { return sys(unix.SYS_CLONE3, 0, 0) }},
	{name: "setns", want: unix.EPERM, run: func(attackEnv) error { return unix.Setns(-1, 0) }},
	{name: "ioctl(TIOCSTI)", want: unix.EPERM, run: func(e attackEnv) error {
		return unix.IoctlSetPointerInt(e.tty, unix.TIOCSTI, 'x')
	}},
	{name: "ioctl(TIOCSTI | 1<<32)", want: unix.EPERM, run: func(e attackEnv) error {
		// The kernel reads the request as an unsigned int: the high bits
		// are ignored, and must not get the call past the filter.
		return unix.IoctlSetPointerInt(e.tty, unix.TIOCSTI|1<<32, 'x')
	}},
	{name: "ioctl(TIOCLINUX)", want: unix.EPERM, run: func(e attackEnv) error {
		return unix.IoctlSetPointerInt(e.tty, unix.TIOCLINUX, 2)
	}},
	{name: "keyctl", want: unix.EPERM, run: func(attackEnv) error {
		_, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 0, 0, 0)
		return err
	}},
	{name: "add_key", want: unix.EPERM, run: func(attackEnv) error { return sys(unix.SYS_ADD_KEY, 0, 0, 0, 0, 0) }},
	{name: "bpf", want: unix.EPERM, run: func(attackEnv) error { return sys(unix.SYS_BPF, 0xffff, 0, 0) }},
	{name: "perf_event_open", want: unix.EPERM, run: func(attackEnv) error {
		return sys(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0)
	}},
	{name: "io_uring_setup", want: unix.EPERM, run: func(attackEnv) error { return sys(unix.SYS_IO_URING_SETUP, 1, 0) }},
	{name: "userfaultfd", want: unix.EPERM, run: func(attackEnv) error { return sys(unix.SYS_USERFAULTFD, 0xffff) }},
	{name: "open_by_handle_at", want: unix.EPERM, run: func(attackEnv) error {
		return sys(unix.SYS_OPEN_BY_HANDLE_AT, uintptr(unix.AT_FDCWD&0xffffffff), 0, 0)
	}},
	{name: "finit_module", want: unix.EPERM, run: func(attackEnv) error { return sys(unix.SYS_FINIT_MODULE, ^uintptr(0), 0, 0) }},
	{name: "pidfd_getfd", want: unix.EPERM, run: func(attackEnv) error { return sys(unix.SYS_PIDFD_GETFD, ^uintptr(0), 0, 0) }},
	{name: "personality(ADDR_NO_RANDOMIZE)", want: unix.EPERM, run: func(attackEnv) error {
		return sys(unix.SYS_PERSONALITY, addrNoRandomize)
	}},
	{name: "socket(AF_PACKET)", want: unix.EPERM, run: func(attackEnv) error {
		return closeIfFD(unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, 0))
	}},
	// A setuid or setgid file, by mode change or at creation. Without the
	// filter each succeeds, on a file of this throwaway child in its own
	// temporary directory.
	{name: "fchmodat(04755)", want: unix.EPERM, run: func(e attackEnv) error {
		return unix.Fchmodat(unix.AT_FDCWD, e.file(), 0o4755, 0)
	}},
	{name: "fchmodat(02755)", want: unix.EPERM, run: func(e attackEnv) error {
		return unix.Fchmodat(unix.AT_FDCWD, e.file(), 0o2755, 0)
	}},
	{name: "fchmodat2(04755)", want: unix.EPERM, run: func(e attackEnv) error {
		// With a flag, x/sys makes the fchmodat2 system call.
		return unix.Fchmodat(unix.AT_FDCWD, e.file(), 0o4755, unix.AT_SYMLINK_NOFOLLOW)
	}},
	{name: "fchmod(04755)", want: unix.EPERM, run: func(e attackEnv) error {
		fd, err := unix.Open(e.file(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Fchmod(fd, 0o4755)
	}},
	{name: "openat(O_CREAT, 04755)", want: unix.EPERM, run: func(e attackEnv) error {
		return closeIfFD(unix.Open(filepath.Join(e.dir, "created"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o4755))
	}},
	{name: "openat(O_TMPFILE, 02755)", want: unix.EPERM, run: func(e attackEnv) error {
		return closeIfFD(unix.Open(e.dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o2755))
	}},
	{name: "mknodat(S_IFREG | 04755)", want: unix.EPERM, run: func(e attackEnv) error {
		return unix.Mknodat(unix.AT_FDCWD, filepath.Join(e.dir, "node"), unix.S_IFREG|0o4755, 0)
	}},
	{name: "openat2", want: unix.ENOSYS, run: func(e attackEnv) error {
		fd, err := unix.Openat2(unix.AT_FDCWD, e.file(), &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC})
		return closeIfFD(fd, err)
	}},
	{name: "socket(AF_INET)", nonetOnly: true, want: unix.EPERM, run: func(attackEnv) error {
		return closeIfFD(unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0))
	}},
	{name: "socket(AF_INET6 | 1<<32)", nonetOnly: true, want: unix.EPERM, run: func(attackEnv) error {
		return sys(unix.SYS_SOCKET, unix.AF_INET6|1<<32, unix.SOCK_DGRAM, 0)
	}},
	{name: "socketpair(AF_INET)", nonetOnly: true, want: unix.EPERM, run: func(attackEnv) error {
		_, err := unix.Socketpair(unix.AF_INET, unix.SOCK_STREAM, 0)
		return err
	}},
}

// allowedUnder are calls the executor profiles must let through: they
// succeed under the filter.
var allowedUnder = []struct {
	name     string
	profiles []string
	run      func(e attackEnv) error
}{
	{"socket(AF_UNIX)", []string{"executor", "executor-nonet"}, func(attackEnv) error {
		return closeIfFD(unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0))
	}},
	{"socket(AF_INET)", []string{"executor"}, func(attackEnv) error {
		return closeIfFD(unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0))
	}},
	{"personality(query)", []string{"executor", "executor-nonet"}, func(attackEnv) error {
		return sys(unix.SYS_PERSONALITY, personalityGet)
	}},
	{"ioctl(TCGETS)", []string{"executor", "executor-nonet"}, func(e attackEnv) error {
		_, err := unix.IoctlGetTermios(e.tty, unix.TCGETS)
		return err
	}},
	{"new threads", []string{"executor", "executor-nonet"}, func(attackEnv) error {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				runtime.LockOSThread() // a goroutine that keeps its thread: others need new ones
				unix.Nanosleep(&unix.Timespec{Nsec: 20e6}, nil)
			})
		}
		wg.Wait()
		return nil
	}},
	{"fork and exec /bin/true", []string{"executor", "executor-nonet"}, func(attackEnv) error {
		return exec.Command("/bin/true").Run()
	}},
	{"fchmodat(0755)", []string{"executor", "executor-nonet"}, func(e attackEnv) error {
		return unix.Fchmodat(unix.AT_FDCWD, e.file(), 0o755, 0)
	}},
	{"fchmodat(01777)", []string{"executor", "executor-nonet"}, func(e attackEnv) error {
		return unix.Fchmodat(unix.AT_FDCWD, e.file(), 0o1777, 0)
	}},
	{"openat(O_CREAT, 0755)", []string{"executor", "executor-nonet"}, func(e attackEnv) error {
		return closeIfFD(unix.Open(filepath.Join(e.dir, "plain"), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o755))
	}},
	{"openat(O_RDONLY, 04755): the mode is ignored", []string{"executor", "executor-nonet"}, func(e attackEnv) error {
		return closeIfFD(unix.Open(e.file(), unix.O_RDONLY|unix.O_CLOEXEC, 0o4755))
	}},
}

// childAttacks installs the profile, then tries every attack and every
// allowed call, and reports the errno of each.
func childAttacks(spec childSpec) error {
	_, tty, err := openPTY()
	if err != nil {
		return fmt.Errorf("pty: %w", err)
	}
	dir, err := os.MkdirTemp("", "stockade-seccomp-attacks")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	env := attackEnv{tty: tty, dir: dir}
	if err := os.WriteFile(env.file(), nil, 0o644); err != nil {
		return err
	}
	// A thread that exists before Install must be filtered too (TSYNC).
	start, done := make(chan struct{}), make(chan error)
	go func() {
		runtime.LockOSThread()
		<-start
		done <- unix.Mount("none", noSuchPath, "tmpfs", 0, "")
	}()
	if err := installSpec(spec); err != nil {
		return err
	}
	results := map[string]int{}
	close(start)
	results[oldThreadAttack] = errnoOf(<-done)
	for _, a := range attacks {
		results[a.name] = errnoOf(a.run(env))
	}
	// The attacks leave the file without a setuid or setgid bit, and
	// make no other file with one.
	results[setIDLeft] = 0
	if ents, err := os.ReadDir(dir); err == nil {
		for _, ent := range ents {
			if fi, err := ent.Info(); err == nil && fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				results[setIDLeft]++
			}
		}
	} else {
		results[setIDLeft] = -1
	}
	for _, a := range allowedUnder {
		results["allowed: "+a.name] = errnoOf(a.run(env))
	}
	report(results)
	return nil
}

// TestExecutorDeniesAttacks installs each executor profile in a child and
// makes the calls it must refuse, for real. Each profile runs twice: as
// is, where the attacks must fail with EPERM, and with EPERM replaced by an
// errno the kernel never returns, which proves that the filter is what
// refused them (on a host where the kernel would refuse them anyway).
// clone3 and openat2 keep ENOSYS in both runs; without the filter clone3
// fails with EINVAL and openat2 succeeds.
func TestExecutorDeniesAttacks(t *testing.T) {
	skipUnlessSeccomp(t)
	for _, profile := range []string{"executor", "executor-nonet"} {
		for _, marker := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/marked=%v", profile, marker), func(t *testing.T) {
				t.Parallel()
				var got map[string]int
				runChildJSON(t, "TestExecutorDeniesAttacks", childSpec{Role: "attacks", Profile: profile, Marker: marker}, &got)
				for _, a := range attacks {
					if a.nonetOnly && profile != "executor-nonet" {
						continue
					}
					want := int(a.want)
					if marker && a.want == unix.EPERM {
						want = markEPERM
					}
					if e, ok := got[a.name]; !ok || e != want {
						t.Errorf("%s: got %s, want %s", a.name, errnoName(e), errnoName(want))
					}
				}
				want := unix.EPERM
				if marker {
					want = markEPERM
				}
				if e := got[oldThreadAttack]; e != int(want) {
					t.Errorf("%s: got %s, want %s", oldThreadAttack, errnoName(e), errnoName(int(want)))
				}
				switch n, ok := got[setIDLeft]; {
				case !ok || n < 0:
					t.Errorf("%s: not counted", setIDLeft)
				case n != 0:
					t.Errorf("%s: %d, want none", setIDLeft, n)
				}
				for _, a := range allowedUnder {
					if !slices.Contains(a.profiles, profile) {
						continue
					}
					if e := got["allowed: "+a.name]; e != 0 {
						t.Errorf("%s must work under %s: got %s", a.name, profile, errnoName(e))
					}
				}
			})
		}
	}
}

// A program the executor profiles must not break, run in the filtered child.
type program struct {
	name string
	argv []string
	want string // in the combined output
}

func executorPrograms(profile string) []program {
	exe, _ := os.Executable()
	wantTCP := "tcp: socket"
	if profile == "executor-nonet" {
		wantTCP = "tcp: " + unix.EPERM.Error()
	}
	return []program{
		{"ls", []string{"ls", "/"}, "proc"},
		{"cat", []string{"cat", "/proc/self/status"}, "Seccomp:\t2"},
		{"no_new_privs", []string{"cat", "/proc/self/status"}, "NoNewPrivs:\t1"},
		{"sh -c", []string{"sh", "-c", "echo $((6 * 7)); ls / | wc -l"}, "42"},
		// xz -T2 makes threads with clone3; ENOSYS sends glibc to clone.
		{"threaded xz", []string{"sh", "-c", "head -c 16000000 /dev/zero | xz -T2 -1 | xz -d | wc -c"}, "16000000"},
		{"threaded python", []string{"python3", "-c", "import threading\n" +
			"ts = [threading.Thread(target=sum, args=(range(10000),)) for _ in range(4)]\n" +
			"[t.start() for t in ts]; [t.join() for t in ts]; print('threads', len(ts))"}, "threads 4"},
		{"go binary", []string{exe, "-test.run=^TestExecutorRunsPrograms$"}, wantTCP},
	}
}

type programResult struct {
	Skipped bool
	Err     string
	Output  string
}

// childPrograms installs the profile, then runs executorPrograms under it.
func childPrograms(spec childSpec) error {
	if err := installSpec(spec); err != nil {
		return err
	}
	results := map[string]programResult{}
	for _, p := range executorPrograms(spec.Profile) {
		if _, err := exec.LookPath(p.argv[0]); err != nil {
			results[p.name] = programResult{Skipped: true, Err: err.Error()}
			continue
		}
		cmd := exec.Command(p.argv[0], p.argv[1:]...)
		if p.name == "go binary" {
			cmd.Env = append(os.Environ(), childEnv+`={"Role":"goprog"}`)
		}
		out, err := cmd.CombinedOutput()
		r := programResult{Output: string(out)}
		if err != nil {
			r.Err = err.Error()
		}
		results[p.name] = r
	}
	report(results)
	return nil
}

// childGoProgram is the Go binary of executorPrograms: it runs under the
// filter it inherited, with threads, garbage collection, a child process
// and a TCP socket.
func childGoProgram(childSpec) error {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			runtime.LockOSThread()
			b := make([][]byte, 0, 64)
			for j := range 64 {
				b = append(b, make([]byte, 4096*(i+j)))
			}
			runtime.KeepAlive(b)
		})
	}
	wg.Wait()
	runtime.GC()
	if err := exec.Command("/bin/true").Run(); err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.Close(fd)
		fmt.Println("tcp: socket")
	} else {
		fmt.Println("tcp:", err)
	}
	return nil
}

// TestExecutorRunsPrograms installs each executor profile in a child, which
// then runs ordinary programs under it: they must work.
func TestExecutorRunsPrograms(t *testing.T) {
	skipUnlessSeccomp(t)
	for _, profile := range []string{"executor", "executor-nonet"} {
		t.Run(profile, func(t *testing.T) {
			t.Parallel()
			var got map[string]programResult
			runChildJSON(t, "TestExecutorRunsPrograms", childSpec{Role: "programs", Profile: profile}, &got)
			for _, p := range executorPrograms(profile) {
				r, ok := got[p.name]
				switch {
				case !ok:
					t.Errorf("%s: no result", p.name)
				case r.Skipped:
					t.Logf("%s: skipped: %s", p.name, r.Err)
				case r.Err != "" || !strings.Contains(r.Output, p.want):
					t.Errorf("%s under %s: error %q, output %q, want %q in it", p.name, profile, r.Err, r.Output, p.want)
				}
			}
		})
	}
}
