package executor

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupRoot is where cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// callCgroup is the cgroup of one call in the v1 pids and memory hierarchies
// (hybrid hosts like Debian's with v1 controllers). The executor enters it
// only around the fork of stage 2 (so that stage 2, and everything the call
// starts, is born inside) and leaves at once, before stage 2 gets its plan
// and the target can run: a fork bomb that fills pids.max then starves only
// the call, never the executor that must kill it.
type callCgroup struct {
	dirs []string // one per hierarchy, the pids one first
	name string   // the receipt's description
}

// makeCallCgroup makes the call's cgroup under this process's own cgroup in
// each v1 hierarchy it can write and sets its limits.
// It returns nil when the host gives no usable hierarchy (no permission, or
// only cgroup v2 without delegated controllers): the caller then relies on
// the process group, the subreaper and, with bwrap, the pid namespace.
func makeCallCgroup(callID string, pids, memory uint64) (*callCgroup, error) {
	own, err := ownCgroups()
	if err != nil {
		return nil, nil
	}
	cg := &callCgroup{}
	for _, h := range []struct {
		controller, file string
		limit            uint64
	}{{"pids", "pids.max", pids}, {"memory", "memory.limit_in_bytes", memory}, {"cpuacct", "", 0}} {
		rel, ok := own[h.controller]
		if !ok {
			continue
		}
		dir := filepath.Join(cgroupRoot, h.controller, rel, "stockade-"+callID)
		if err := os.Mkdir(dir, 0o700); err != nil {
			if h.controller == "pids" {
				return nil, nil // no permission here: no cgroup at all
			}
			continue
		}
		cg.dirs = append(cg.dirs, dir)
		if h.file != "" && h.limit > 0 {
			if err := os.WriteFile(filepath.Join(dir, h.file), []byte(strconv.FormatUint(h.limit, 10)), 0); err != nil {
				cg.remove()
				return nil, fmt.Errorf("cgroup %s: %w", h.file, err)
			}
		}
	}
	if len(cg.dirs) == 0 {
		return nil, nil
	}
	var names []string
	for _, d := range cg.dirs {
		names = append(names, strings.TrimPrefix(d, cgroupRoot+"/"))
	}
	cg.name = "v1:" + strings.Join(names, ",")
	return cg, nil
}

// ownCgroups maps each v1 controller to this process's cgroup path in it.
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			m[c] = parts[2]
		}
	}
	if len(m) == 0 {
		return nil, errors.New("no v1 hierarchy")
	}
	return m, sc.Err()
}

// killAll kills every process of the cgroup but this one, until none is
// left or the timeout passes. A fork bomb cannot outrun it: the pids limit
// caps how many there can be.
func (cg *callCgroup) killAll(timeout time.Duration) []int {
	self := os.Getpid()
	end := time.Now().Add(timeout)
	for {
		var left []int
		for _, pid := range cg.procs() {
			if pid != self {
				left = append(left, pid)
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		if len(left) == 0 || time.Now().After(end) {
			return left
		}
		reapAll() // zombies stay listed until reaped
		time.Sleep(time.Millisecond)
	}
}

func (cg *callCgroup) procs() []int {
	b, err := os.ReadFile(filepath.Join(cg.dirs[0], "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// enter moves this process into the call's cgroups.
func (cg *callCgroup) enter() error {
	self := []byte(strconv.Itoa(os.Getpid()))
	for _, d := range cg.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), self, 0); err != nil {
			cg.leave()
			return fmt.Errorf("entering cgroup: %w", err)
		}
	}
	return nil
}

// leave moves this process back to its parent cgroups.
func (cg *callCgroup) leave() {
	self := []byte(strconv.Itoa(os.Getpid()))
	for _, d := range cg.dirs {
		_ = os.WriteFile(filepath.Join(filepath.Dir(d), "cgroup.procs"), self, 0)
	}
}

// remove deletes the call's cgroups (they must be empty).
func (cg *callCgroup) remove() {
	for _, d := range cg.dirs {
		_ = unix.Rmdir(d)
	}
}

// oomKilled reports whether the memory controller killed a process of the
// call (v1 memory.oom_control's oom_kill counter).
func (cg *callCgroup) oomKilled() bool {
	if cg == nil {
		return false
	}
	for _, d := range cg.dirs {
		b, err := os.ReadFile(filepath.Join(d, "memory.oom_control"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if n, ok := strings.CutPrefix(line, "oom_kill "); ok && n != "0" {
				return true
			}
		}
	}
	return false
}

// usage reads what every process of the call used, from the cpuacct and
// memory controllers: CPU in microseconds and the peak memory in KiB. ok is
// false where those controllers are not available. Unlike wait4's rusage it
// counts processes nobody waited for (bwrap does not wait for its pid-1).
func (cg *callCgroup) usage() (user, system, maxKiB int64, ok bool) {
	if cg == nil {
		return 0, 0, 0, false
	}
	read := func(name string) (int64, bool) {
		for _, d := range cg.dirs {
			b, err := os.ReadFile(filepath.Join(d, name))
			if err != nil {
				continue
			}
			v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			return v, err == nil
		}
		return 0, false
	}
	u, ok1 := read("cpuacct.usage_user")
	s, ok2 := read("cpuacct.usage_sys")
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	m, _ := read("memory.max_usage_in_bytes")
	return u / 1000, s / 1000, m / 1024, true
}
