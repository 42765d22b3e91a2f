//go:build linux && (amd64 || arm64)

package seccomp

import "testing"

// TestSyscallTablesMatchXSysConstants checks the table of the architecture
// the tests run on against the golang.org/x/sys/unix constants compiled for
// it (sysnum_xsys_linux_*_test.go), name by name.
func TestSyscallTablesMatchXSysConstants(t *testing.T) {
	t.Parallel()
	table := arches[NativeArch()].names
	if len(xsysNumbers) != len(table) {
		t.Errorf("x/sys list has %d names, the table %d", len(xsysNumbers), len(table))
	}
	for name, want := range xsysNumbers {
		if got, ok := table[name]; !ok || got != want {
			t.Errorf("%s: table has %d (present %v), unix.SYS_%s = %d", name, got, ok, name, want)
		}
	}
}
