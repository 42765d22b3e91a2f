package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/ipc"
)

// Stage2Arg is argv[1] of the second stage.
const Stage2Arg = "stage2"

// stagePlan is what stage 1 tells stage 2: the spec, and how stage 1 decided
// to apply it. It travels only between the two stages of one executor.
type stagePlan struct {
	Spec ipc.ExecSpec `msgpack:"spec"`
	// Seccomp names the profile stage 2 installs; empty when bwrap installed
	// it already (--seccomp FD).
	Seccomp string `msgpack:"seccomp"`
}

// stageReport is what stage 2 tells stage 1 just before exec: what it
// enforced. Stage 1 then reads EOF (exec'd) or an error.
type stageReport struct {
	LandlockABI int `msgpack:"landlock_abi"`
}

// artifactDigest is the SHA-256 of the program file, for the attestation.
func artifactDigest(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// classify fills an outcome's exit code, signal and status from the wait
// status and what the monitor saw. reportsSignalsAsExit is set for bwrap,
// which reports its child's death by signal N as exit status 128+N (a
// target's own exit(128+N) then reads as a signal too).
func classify(out *ipc.Outcome, ws syscall.WaitStatus, spec *ipc.ExecSpec, reportsSignalsAsExit, quotaHit, timedOut bool) {
	var sig syscall.Signal
	switch {
	case ws.Exited():
		out.ExitCode = ws.ExitStatus()
		if reportsSignalsAsExit && out.ExitCode > 128 && out.ExitCode <= 128+64 {
			sig = syscall.Signal(out.ExitCode - 128)
		}
	case ws.Signaled():
		sig = ws.Signal()
		out.ExitCode = 128 + int(sig)
	}
	if sig != 0 {
		out.Signal = unix.SignalName(sig)
	}
	switch {
	case quotaHit:
		out.Status = ipc.StatusQuotaExceeded
	case timedOut:
		out.Status = ipc.StatusTimedOut
	case sig == syscall.SIGXCPU || sig == syscall.SIGXFSZ ||
		sig == syscall.SIGKILL && uint64(out.Usage.UserMicros+out.Usage.SystemMicros) >= spec.Limits.CPUSeconds*1e6:
		out.Status = ipc.StatusQuotaExceeded
	case sig != 0:
		out.Status = ipc.StatusSignaled
	case out.ExitCode == 0:
		out.Status = ipc.StatusOK
	default:
		out.Status = ipc.StatusExited
	}
}

// handOver sends the plan to stage 2 and waits for its verdict: a report of
// what it enforced followed by the socket closing (the target was exec'd: the
// socket is close-on-exec), or an error frame.
func handOver(f *os.File, plan *stagePlan) (stageReport, error) {
	var rep stageReport
	b, err := ipc.EncodeEnvelope(0, ipc.KindExec, plan)
	if err != nil {
		return rep, err
	}
	if err := ipc.WriteFrame(f, b, ipc.ExecSpecFrameMax); err != nil {
		return rep, ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox stage did not take the plan")
	}
	_ = f.SetReadDeadline(time.Now().Add(10 * time.Second))
	reported := false
	for {
		body, err := ipc.ReadFrame(f, ipc.ControlFrameMax)
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				return rep, ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox stage did not answer")
			case !reported:
				// Closed without a report: stage 2 (or bwrap) died before
				// confining the target.
				return rep, ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox stage failed before running the target")
			}
			return rep, nil // EOF after the report: exec'd
		}
		m, err := ipc.DecodeEnvelope(body)
		if err != nil {
			return rep, ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox stage sent garbage")
		}
		switch {
		case m.Kind == ipc.KindError:
			return rep, m.Err()
		case m.Kind == ipc.KindStatus && !reported:
			if err := m.Decode(&rep); err != nil {
				return rep, ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox stage sent garbage")
			}
			reported = true
		default:
			return rep, ipc.Errorf(ipc.ClassSandboxUnavailable, "sandbox stage sent garbage")
		}
	}
}

func readStagePlan(f *os.File) (*stagePlan, error) {
	body, err := ipc.ReadFrame(f, ipc.ExecSpecFrameMax)
	if err != nil {
		return nil, err
	}
	m, err := ipc.DecodeEnvelope(body)
	if err != nil {
		return nil, err
	}
	var plan stagePlan
	if err := m.Decode(&plan); err != nil {
		return nil, err
	}
	if err := checkSpec(&plan.Spec); err != nil {
		return nil, err
	}
	return &plan, nil
}

// asError keeps an *ipc.Error's class; any other error is internal.
func asError(err error) *ipc.Error {
	var e *ipc.Error
	if errors.As(err, &e) {
		return e
	}
	return ipc.Errorf(ipc.ClassInternal, "%v", err)
}

func stageFail(f *os.File, e *ipc.Error) int {
	if b, err := ipc.EncodeEnvelope(0, ipc.KindError, e); err == nil {
		_ = ipc.WriteFrame(f, b, ipc.ControlFrameMax)
	}
	return 126
}
