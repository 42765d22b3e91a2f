package seccomp

import (
	"fmt"
	"runtime"
	"sort"
)

// Arch is a Linux architecture a filter is compiled for, named like GOARCH.
type Arch string

// The architectures this package compiles filters for.
const (
	AMD64 Arch = "amd64"
	ARM64 Arch = "arm64"
)

// Arches lists the supported architectures.
func Arches() []Arch { return []Arch{AMD64, ARM64} }

// NativeArch is the architecture of the running binary. It is one of Arches
// on the hosts Stockade supports; on any other, Compile rejects it.
func NativeArch() Arch { return Arch(runtime.GOARCH) }

// archInfo is what the compiler needs to know about an architecture.
type archInfo struct {
	// audit is the AUDIT_ARCH_* value the kernel puts in seccomp_data.arch.
	audit uint32
	// x32Bit, when not zero, marks the system calls of a second ABI that
	// shares audit (the x32 ABI of x86-64): filters kill them.
	x32Bit uint32
	// names maps a system call name to its number.
	names map[string]int
	// numbers is the reverse of names.
	numbers map[int]string
}

// AUDIT_ARCH_* values: the ELF machine, __AUDIT_ARCH_64BIT (0x80000000) and
// __AUDIT_ARCH_LE (0x40000000).
const (
	auditArchX86_64  = 0xc000003e // EM_X86_64 (62)
	auditArchAArch64 = 0xc00000b7 // EM_AARCH64 (183)
	x32SyscallBit    = 0x40000000 // __X32_SYSCALL_BIT
)

var arches = map[Arch]*archInfo{
	AMD64: newArchInfo(auditArchX86_64, x32SyscallBit, sysnumAMD64),
	ARM64: newArchInfo(auditArchAArch64, 0, sysnumARM64),
}

func newArchInfo(audit, x32Bit uint32, names map[string]int) *archInfo {
	numbers := make(map[int]string, len(names))
	for name, nr := range names {
		if old, dup := numbers[nr]; dup {
			panic(fmt.Sprintf("seccomp: syscall table: %s and %s share number %d", old, name, nr))
		}
		numbers[nr] = name
	}
	return &archInfo{audit: audit, x32Bit: x32Bit, names: names, numbers: numbers}
}

func lookupArch(a Arch) (*archInfo, error) {
	info, ok := arches[a]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedArch, a)
	}
	return info, nil
}

// SyscallNumber returns the number of the named system call on arch. A name
// the architecture does not have is an error wrapping ErrUnknownSyscall.
func SyscallNumber(arch Arch, name string) (int, error) {
	info, err := lookupArch(arch)
	if err != nil {
		return 0, err
	}
	nr, ok := info.names[name]
	if !ok {
		return 0, fmt.Errorf("%w: %q on %s", ErrUnknownSyscall, name, arch)
	}
	return nr, nil
}

// SyscallName returns the name of system call nr on arch, if it has one.
func SyscallName(arch Arch, nr int) (string, bool) {
	info, err := lookupArch(arch)
	if err != nil {
		return "", false
	}
	name, ok := info.numbers[nr]
	return name, ok
}

// SyscallNames lists the system calls of arch, sorted by name.
func SyscallNames(arch Arch) []string {
	info, err := lookupArch(arch)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(info.names))
	for name := range info.names {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
