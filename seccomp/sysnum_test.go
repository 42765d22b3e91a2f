package seccomp

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSyscallTablesMatchXSys compares both tables with the SYS_* constants of
// golang.org/x/sys/unix for linux/amd64 and linux/arm64, read from the
// module's source, so that both architectures are checked on any host.
func TestSyscallTablesMatchXSys(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "golang.org/x/sys").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("cannot locate the golang.org/x/sys source (go list: %v)", err)
	}
	for _, tc := range []struct {
		arch  Arch
		file  string
		table map[string]int
	}{
		{AMD64, "zsysnum_linux_amd64.go", sysnumAMD64},
		{ARM64, "zsysnum_linux_arm64.go", sysnumARM64},
	} {
		t.Run(string(tc.arch), func(t *testing.T) {
			want := parseXSysNumbers(t, filepath.Join(dir, "unix", tc.file))
			// Not a system call: the start of the range arm64 leaves to
			// architecture-specific calls, and uses none of.
			delete(want, "arch_specific_syscall")
			for name, nr := range want {
				if got, ok := tc.table[name]; !ok || got != nr {
					t.Errorf("%s: table has %d (present %v), x/sys has %d", name, got, ok, nr)
				}
			}
			for name := range tc.table {
				if _, ok := want[name]; !ok {
					t.Errorf("%s: in the table, not in x/sys", name)
				}
			}
		})
	}
}

func parseXSysNumbers(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Skipf("cannot parse %s: %v", path, err)
	}
	nums := map[string]int{}
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || len(spec.Values) != 1 {
			return true
		}
		lit, ok := spec.Values[0].(*ast.BasicLit)
		name := spec.Names[0].Name
		if !ok || lit.Kind != token.INT || !strings.HasPrefix(name, "SYS_") {
			return true
		}
		v, err := strconv.Atoi(lit.Value)
		if err != nil {
			t.Fatalf("%s = %s: %v", name, lit.Value, err)
		}
		nums[strings.ToLower(strings.TrimPrefix(name, "SYS_"))] = v
		return true
	})
	if len(nums) < 300 {
		t.Fatalf("%s: only %d SYS_ constants found", path, len(nums))
	}
	return nums
}

func TestSyscallLookup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		arch    Arch
		name    string
		nr      int
		wantErr error
	}{
		{AMD64, "read", 0, nil},
		{AMD64, "ptrace", 101, nil},
		{AMD64, "open", 2, nil},
		{AMD64, "clone3", 435, nil},
		{AMD64, "rseq_slice_yield", 471, nil},
		{ARM64, "io_setup", 0, nil},
		{ARM64, "ptrace", 117, nil},
		{ARM64, "clone3", 435, nil},
		{ARM64, "open", 0, ErrUnknownSyscall},       // arm64 has only openat
		{ARM64, "arch_prctl", 0, ErrUnknownSyscall}, // x86 only
		{AMD64, "no_such_call", 0, ErrUnknownSyscall},
		{"riscv64", "read", 0, ErrUnsupportedArch},
	} {
		t.Run(string(tc.arch)+"/"+tc.name, func(t *testing.T) {
			nr, err := SyscallNumber(tc.arch, tc.name)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("SyscallNumber(%s, %s) error = %v, want %v", tc.arch, tc.name, err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if nr != tc.nr {
				t.Errorf("SyscallNumber(%s, %s) = %d, want %d", tc.arch, tc.name, nr, tc.nr)
			}
			if name, ok := SyscallName(tc.arch, nr); !ok || name != tc.name {
				t.Errorf("SyscallName(%s, %d) = %q, %v; want %q", tc.arch, nr, name, ok, tc.name)
			}
		})
	}
	for _, arch := range Arches() {
		names := SyscallNames(arch)
		if len(names) < 300 {
			t.Errorf("%s: only %d system calls", arch, len(names))
		}
		for _, name := range names {
			nr, err := SyscallNumber(arch, name)
			if back, ok := SyscallName(arch, nr); err != nil || !ok || back != name {
				t.Errorf("%s: %s -> %d, %v -> %q", arch, name, nr, err, back)
			}
		}
	}
}
