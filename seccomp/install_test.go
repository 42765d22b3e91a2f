package seccomp

import (
	"errors"
	"testing"
)

// TestInstallRefusesBadPrograms checks the refusals Install makes before it
// touches the kernel: they return ErrInstall and leave this process as it
// was (were one to install, the test binary would die here).
func TestInstallRefusesBadPrograms(t *testing.T) {
	other := ARM64
	if NativeArch() == ARM64 {
		other = AMD64
	}
	_, foreign := namedProgram(t, "executor", other)
	for _, tc := range []struct {
		name string
		prog *Program
	}{
		{"nil", nil},
		{"empty", &Program{arch: NativeArch()}},
		{"other architecture", foreign},
		{"invalid", &Program{arch: NativeArch(), insns: []insn{{Code: bpfLD | bpfW | bpfABS, K: 2}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Install(tc.prog); !errors.Is(err, ErrInstall) {
				t.Errorf("Install = %v, want ErrInstall", err)
			}
		})
	}
}
