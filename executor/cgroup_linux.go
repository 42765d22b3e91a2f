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
//
// Where cgroup v2 is mounted (the whole of /sys/fs/cgroup, or its unified
// part on hybrid hosts) the call also gets a v2 cgroup: cgroup.kill ends
// every process in it at once, and its pids and memory limits apply where
// those controllers are delegated to it.
type callCgroup struct {
	dirs []string // one per v1 hierarchy, the pids one first
	v2   string   // the v2 cgroup, when there is one
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
	if root := unifiedRoot(); root != "" {
		if rel, ok := own[""]; ok {
			dir := filepath.Join(root, rel, "stockade-"+callID)
			if err := os.Mkdir(dir, 0o700); err == nil {
				cg.v2 = dir
				for file, limit := range map[string]uint64{"pids.max": pids, "memory.max": memory} {
					if _, err := os.Stat(filepath.Join(dir, file)); err == nil && limit > 0 {
						if err := os.WriteFile(filepath.Join(dir, file), []byte(strconv.FormatUint(limit, 10)), 0); err != nil {
							cg.remove()
							return nil, fmt.Errorf("cgroup %s: %w", file, err)
						}
					}
				}
			}
		}
	}
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
			continue // no permission here
		}
		cg.dirs = append(cg.dirs, dir)
		if h.file != "" && h.limit > 0 {
			if err := os.WriteFile(filepath.Join(dir, h.file), []byte(strconv.FormatUint(h.limit, 10)), 0); err != nil {
				cg.remove()
				return nil, fmt.Errorf("cgroup %s: %w", h.file, err)
			}
		}
	}
	if len(cg.dirs) == 0 && cg.v2 == "" {
		return nil, nil
	}
	var names []string
	for _, d := range cg.dirs {
		names = append(names, strings.TrimPrefix(d, cgroupRoot+"/"))
	}
	if len(names) > 0 {
		cg.name = "v1:" + strings.Join(names, ",")
	}
	if cg.v2 != "" {
		if cg.name != "" {
			cg.name += " "
		}
		cg.name += "v2:" + strings.TrimPrefix(cg.v2, cgroupRoot+"/")
	}
	return cg, nil
}

// unifiedRoot is where cgroup v2 is mounted, or "".
func unifiedRoot() string {
	for _, root := range []string{cgroupRoot, filepath.Join(cgroupRoot, "unified")} {
		if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
			return root
		}
	}
	return ""
}

// ownCgroups maps each v1 controller to this process's cgroup path in it,
// and "" to its v2 path.
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
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			m[""] = parts[2]
			continue
		}
		if parts[1] == "" {
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
	if cg.v2 != "" {
		// One write kills every process of the cgroup, forks in flight too.
		_ = os.WriteFile(filepath.Join(cg.v2, "cgroup.kill"), []byte("1"), 0)
	}
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
	dir := cg.v2
	if len(cg.dirs) > 0 {
		dir = cg.dirs[0]
	}
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
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
	for _, d := range cg.all() {
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
	for _, d := range cg.all() {
		_ = os.WriteFile(filepath.Join(filepath.Dir(d), "cgroup.procs"), self, 0)
	}
}

// all lists every cgroup of the call.
func (cg *callCgroup) all() []string {
	if cg.v2 == "" {
		return cg.dirs
	}
	return append(append([]string{}, cg.dirs...), cg.v2)
}

// remove deletes the call's cgroups (they must be empty).
func (cg *callCgroup) remove() {
	for _, d := range cg.all() {
		_ = unix.Rmdir(d)
	}
}

// oomKilled reports whether the memory controller killed a process of the
// call (v1 memory.oom_control's oom_kill counter).
func (cg *callCgroup) oomKilled() bool {
	if cg == nil {
		return false
	}
	if cg.v2 != "" && keyed(filepath.Join(cg.v2, "memory.events"))["oom_kill"] > 0 {
		return true
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
		for _, d := range cg.all() {
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
	m, _ := read("memory.max_usage_in_bytes")
	if ok1 && ok2 {
		return u / 1000, s / 1000, m / 1024, true
	}
	if cg.v2 == "" {
		return 0, 0, 0, false
	}
	// v2: cpu.stat is there without the cpu controller.
	stat := keyed(filepath.Join(cg.v2, "cpu.stat"))
	uu, ok1 := stat["user_usec"]
	su, ok2 := stat["system_usec"]
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	if peak, ok := read("memory.peak"); ok {
		m = peak
	}
	return uu, su, m / 1024, true
}

// keyed reads a cgroup file of "key value" lines.
func keyed(path string) map[string]int64 {
	m := map[string]int64{}
	b, err := os.ReadFile(path)
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			m[k] = n
		}
	}
	return m
}
