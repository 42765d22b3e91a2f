package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/stockade-dev/stockade/ipc"
)

// Software names the executor in Hello.
const Software = "stockade-exec"

// Serve runs the executor's side of the exec channel on the socket f: Hello,
// one exec request, the outcome. It returns when the call is over.
//
// scratchRoot, in multi-uid mode, is where this executor makes the call's
// own directory (ExecSpec.Scratch) as its uid, and removes it afterwards.
func Serve(ctx context.Context, log *slog.Logger, f *os.File, scratchRoot string) error {
	nc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("exec socket: %w", err)
	}
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		nc.Close()
		return errors.New("exec socket is not a unix socket")
	}
	c, err := ipc.NewConn(uc)
	if err != nil {
		uc.Close()
		return err
	}
	defer c.Close()
	// SIGTERM (ctx) while waiting for a broker or a spec ends the wait.
	stopWait := context.AfterFunc(ctx, func() { c.Close() })
	if p := c.Peer().UID; p != 0 && p != uint32(os.Getuid()) {
		return fmt.Errorf("exec socket peer uid %d is neither root nor mine", p)
	}
	// The supervisor may fork executors ahead of demand: an executor waits
	// for its broker as long as it takes (the socketpair reaches only the
	// supervisor and then one broker; the executor dies with the supervisor).
	if err := c.AcceptWithin(ipc.ChannelExec, Software, 0); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			return nil // forked ahead and never used: nothing to do
		}
		return fmt.Errorf("hello: %w", err)
	}
	c.SetReadMax(ipc.ExecSpecFrameMax)
	c.SetAcceptFiles(true) // a Tier A module comes with the exec or prepare request
	m, err := c.Recv(ipc.HelloTimeout)
	c.SetAcceptFiles(false)
	if err != nil {
		return fmt.Errorf("exec request: %w", err)
	}
	defer m.CloseFiles()
	var prepared *preparedWasm
	if m.Kind == ipc.KindPrepare {
		// A warm Tier A executor: confine, compile, then wait for its one
		// call as long as the broker keeps it.
		if prepared, err = prepare(ctx, log, c, m); err != nil {
			log.Warn("prepare failed", "err", err)
			return c.SendError(m.ID, err)
		}
		if err := c.Send(m.ID, ipc.KindPrepare, ipc.Empty{}, ipc.ControlFrameMax); err != nil {
			return err
		}
		m.CloseFiles()
		if m, err = c.Recv(0); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil // kept warm and never used
			}
			return fmt.Errorf("exec request: %w", err)
		}
	}
	c.SetReadMax(ipc.ControlFrameMax)
	if m.Kind != ipc.KindExec {
		_ = c.SendError(m.ID, ipc.Errorf(ipc.ClassProtocol, "expected exec"))
		return fmt.Errorf("unexpected %q", m.Kind)
	}
	var spec ipc.ExecSpec
	if err := m.Decode(&spec); err != nil {
		_ = c.SendError(m.ID, ipc.Errorf(ipc.ClassProtocol, "malformed exec spec"))
		return err
	}
	if err := checkSpec(&spec); err != nil {
		_ = c.SendError(m.ID, err)
		return err
	}
	if spec.Tier == "A" {
		stopWait()
		log = log.With("call_id", spec.CallID, "tier", "A")
		files := m.Files()
		if prepared == nil {
			if len(files) != 1 {
				err := ipc.Errorf(ipc.ClassInvalidInput, "a Tier A call comes with exactly one module descriptor")
				_ = c.SendError(m.ID, err)
				return err
			}
			if prepared, err = prepareModule(ctx, spec.Wasm.Instrumented, spec.Wasm.CacheDir, files[0]); err != nil {
				return c.SendError(m.ID, err)
			}
		} else if len(files) != 0 || spec.Wasm.Instrumented != prepared.digest {
			err := ipc.Errorf(ipc.ClassInvalidInput, "a call for another module than the one prepared")
			_ = c.SendError(m.ID, err)
			return err
		}
		defer prepared.close()
		// No reader of the socket meanwhile: the guest's host requests
		// and their answers are the only traffic until the outcome.
		c.SetReadMax(ipc.HostFrameMax)
		out, err := prepared.run(ctx, log, c, &spec)
		if err != nil {
			log.Warn("call failed", "err", err)
			return c.SendError(m.ID, err)
		}
		return c.Send(m.ID, ipc.KindExec, out, int(spec.MaxOutput)+ipc.ControlFrameMax+ipc.WasmOutcomeExtra)
	} else if len(m.Files()) != 0 || prepared != nil {
		err := ipc.Errorf(ipc.ClassInvalidInput, "descriptors or a prepared module with a native call")
		_ = c.SendError(m.ID, err)
		return err
	}
	log = log.With("call_id", spec.CallID)
	stopWait()
	if spec.Scratch != "" {
		remove, err := makeScratch(&spec, scratchRoot)
		if err != nil {
			_ = c.SendError(m.ID, err)
			return err
		}
		defer remove(log)
	}

	// The broker closing the socket (it gave up, or died) ends the call.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = c.Recv(0)
		cancel()
	}()

	out, err := run(ctx, log, &spec)
	if err != nil {
		log.Warn("call failed", "err", err)
		return c.SendError(m.ID, err)
	}
	return c.Send(m.ID, ipc.KindExec, out, int(spec.MaxOutput)+ipc.ControlFrameMax)
}

// checkSpec is a shape check: the broker is trusted, but a spec that makes no
// sense must fail loudly rather than run something else.
func checkSpec(s *ipc.ExecSpec) error {
	if s.Tier == "A" || s.Wasm != nil {
		w := s.Wasm
		switch {
		case s.Tier != "A" || w == nil:
			return ipc.Errorf(ipc.ClassInvalidInput, "tier %q with a wasm spec that does not match it", s.Tier)
		case s.Path != "" || len(s.Argv) != 0 || s.Sandbox != nil || s.Scratch != "":
			return ipc.Errorf(ipc.ClassInvalidInput, "a Tier A call runs no program")
		case s.TimeoutMS <= 0 || s.MaxOutput <= 0 || w.Fuel == 0 || w.MemoryPages == 0 || w.MaxHostCalls <= 0:
			return ipc.Errorf(ipc.ClassInvalidInput, "timeout, max_output, fuel, memory and host calls must be positive")
		case w.Export == "":
			return ipc.Errorf(ipc.ClassInvalidInput, "no export to call")
		}
		return nil
	}
	switch {
	case !filepath.IsAbs(s.Path) || filepath.Clean(s.Path) != s.Path:
		return ipc.Errorf(ipc.ClassInvalidInput, "program path must be absolute and clean")
	case len(s.Argv) == 0:
		return ipc.Errorf(ipc.ClassInvalidInput, "empty argv")
	case !filepath.IsAbs(s.Dir):
		return ipc.Errorf(ipc.ClassInvalidInput, "workspace must be absolute")
	case s.TimeoutMS <= 0 || s.MaxOutput <= 0:
		return ipc.Errorf(ipc.ClassInvalidInput, "timeout and max_output must be positive")
	case s.Tier == "B" && s.Sandbox != nil, s.Tier == "C" && s.Sandbox == nil:
		return ipc.Errorf(ipc.ClassInvalidInput, "tier %q with a sandbox spec that does not match it", s.Tier)
	case s.Tier != "B" && s.Tier != "C":
		return ipc.Errorf(ipc.ClassSandboxUnavailable, "tier %q is not available", s.Tier)
	}
	if sb := s.Sandbox; sb != nil {
		if sb.Bwrap != "off" && sb.Bwrap != "required" {
			return ipc.Errorf(ipc.ClassInvalidInput, "bwrap must be off or required")
		}
		for _, p := range append(append([]string{}, sb.ReadOnly...), sb.ReadWrite...) {
			if !filepath.IsAbs(p) || filepath.Clean(p) != p {
				return ipc.Errorf(ipc.ClassInvalidInput, "sandbox paths must be absolute and clean")
			}
		}
	}
	for _, e := range s.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return ipc.Errorf(ipc.ClassInvalidInput, "malformed environment entry")
		}
	}
	return nil
}

// deadline turns a spec's timeout into a duration.
func deadline(s *ipc.ExecSpec) time.Duration { return time.Duration(s.TimeoutMS) * time.Millisecond }

// makeScratch makes the call's directory, its workspace and its temporary
// directory, 0700 and this executor's (multi-uid mode: the broker, another
// uid, cannot). The directory must be a new direct child of scratchRoot,
// named by the call id. remove deletes it all once the call's processes
// are gone.
func makeScratch(spec *ipc.ExecSpec, scratchRoot string) (remove func(*slog.Logger), err error) {
	want := filepath.Join(scratchRoot, spec.CallID)
	switch {
	case scratchRoot == "":
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "a scratch directory, but this executor has no scratch root")
	case spec.CallID == "" || strings.ContainsAny(spec.CallID, "/.") || spec.Scratch != want:
		return nil, ipc.Errorf(ipc.ClassInvalidInput, "scratch directory is not the call's directory in the scratch root")
	}
	if err := os.Mkdir(want, 0o700); err != nil {
		return nil, ipc.Errorf(ipc.ClassInternal, "cannot make the call's directory")
	}
	remove = func(log *slog.Logger) {
		// The scratch root is not readable (it is not listable by the
		// uids that use it), so os.RemoveAll(want) cannot work from it:
		// empty want, then remove it.
		ents, err := os.ReadDir(want)
		for _, e := range ents {
			err = errors.Join(err, os.RemoveAll(filepath.Join(want, e.Name())))
		}
		if err = errors.Join(err, os.Remove(want)); err != nil {
			log.Warn("removing the call's directory", "err", err)
		}
	}
	for _, d := range []string{"ws", "tmp"} {
		if err := os.Mkdir(filepath.Join(want, d), 0o700); err != nil {
			remove(slog.New(slog.DiscardHandler))
			return nil, ipc.Errorf(ipc.ClassInternal, "cannot make the call's directory")
		}
	}
	return remove, nil
}
