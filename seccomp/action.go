package seccomp

import (
	"errors"
	"fmt"
)

// Error classes. Errors returned by this package wrap one of them.
var (
	// ErrUnsupportedArch: the architecture is not amd64 or arm64.
	ErrUnsupportedArch = errors.New("seccomp: unsupported architecture")
	// ErrUnknownSyscall: a system call name that the architecture lacks.
	ErrUnknownSyscall = errors.New("seccomp: unknown system call")
	// ErrUnknownProfile: Named was given a name it does not know.
	ErrUnknownProfile = errors.New("seccomp: unknown profile")
	// ErrInvalidProfile: a rule table that cannot be compiled as written.
	ErrInvalidProfile = errors.New("seccomp: invalid profile")
	// ErrInvalidProgram: a BPF program the kernel would refuse to load.
	ErrInvalidProgram = errors.New("seccomp: invalid program")
	// ErrInstall: the filter is not in force. The caller must not go on.
	ErrInstall = errors.New("seccomp: filter not installed")
)

// Action is what the kernel does with a system call: a SECCOMP_RET_* value,
// as a filter returns it (the action in the high 16 bits, data in the low).
type Action uint32

// Actions a rule may take. Errno actions are built with ActErrno.
const (
	ActKillProcess Action = 0x80000000 // SECCOMP_RET_KILL_PROCESS: SIGSYS to the whole process, uncatchable
	ActKillThread  Action = 0x00000000 // SECCOMP_RET_KILL_THREAD
	ActTrap        Action = 0x00030000 // SECCOMP_RET_TRAP: a catchable SIGSYS
	ActLog         Action = 0x7ffc0000 // SECCOMP_RET_LOG: allowed, and logged by the kernel
	ActAllow       Action = 0x7fff0000 // SECCOMP_RET_ALLOW
	ActEPERM       Action = 0x00050001 // SECCOMP_RET_ERRNO | EPERM
	ActENOSYS      Action = 0x00050026 // SECCOMP_RET_ERRNO | ENOSYS

	actErrnoBase Action = 0x00050000 // SECCOMP_RET_ERRNO
	actTrace     Action = 0x7ff00000 // SECCOMP_RET_TRACE: not for rules, named in disassembly
	actUserNotif Action = 0x7fc00000 // SECCOMP_RET_USER_NOTIF: likewise

	actionMask = 0xffff0000 // SECCOMP_RET_ACTION_FULL
	dataMask   = 0x0000ffff // SECCOMP_RET_DATA
)

// Linux errno values used by the profiles. They are the kernel's numbers,
// the same on amd64 and arm64, whatever the host compiling the filter.
const (
	EPERM        = 1
	ENOTTY       = 25
	EINVAL       = 22
	ENOSYS       = 38
	EAFNOSUPPORT = 97
	maxErrno     = 4095 // MAX_ERRNO: larger values are not errors to libc
)

// ActErrno makes the system call fail with the given Linux errno, without
// running it.
func ActErrno(errno uint16) Action { return actErrnoBase | Action(errno) }

// Errno reports the errno of an errno action.
func (a Action) Errno() (errno uint16, ok bool) {
	if a&actionMask != actErrnoBase {
		return 0, false
	}
	return uint16(a & dataMask), true
}

var errnoNames = map[uint16]string{
	EPERM: "EPERM", ENOTTY: "ENOTTY", EINVAL: "EINVAL", ENOSYS: "ENOSYS", EAFNOSUPPORT: "EAFNOSUPPORT",
}

func (a Action) String() string {
	switch a {
	case ActKillProcess:
		return "KILL_PROCESS"
	case ActKillThread:
		return "KILL_THREAD"
	case ActTrap:
		return "TRAP"
	case ActLog:
		return "LOG"
	case ActAllow:
		return "ALLOW"
	}
	data := uint16(a & dataMask)
	switch a & actionMask {
	case actErrnoBase:
		if name, ok := errnoNames[data]; ok {
			return "ERRNO(" + name + ")"
		}
		return fmt.Sprintf("ERRNO(%d)", data)
	case ActTrap:
		return fmt.Sprintf("TRAP(%d)", data)
	case actTrace:
		return fmt.Sprintf("TRACE(%d)", data)
	case actUserNotif:
		return "USER_NOTIF"
	}
	return fmt.Sprintf("RET(%#08x)", uint32(a))
}

// validForRule reports whether a rule or a default may use the action: the
// kill, trap, log and allow actions, and errno actions with a real errno.
// Trace and user notification need a supervisor this project does not have.
func (a Action) validForRule() bool {
	switch a {
	case ActKillProcess, ActKillThread, ActTrap, ActLog, ActAllow:
		return true
	}
	errno, ok := a.Errno()
	return ok && errno <= maxErrno
}
