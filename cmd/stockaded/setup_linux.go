package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/stockade-dev/stockade/ipc"
)

// runSetup is `stockaded setup`: as root, it creates the system users and
// groups of multi-uid mode and the state and runtime directories with their
// owners and modes. It is idempotent: what exists and is right is left
// alone, what is wrong is fixed, and every step is said on stdout.
func runSetup(args []string) int {
	fs := flag.NewFlagSet("setup", flag.ContinueOnError)
	configPath := fs.String("config", "", "configuration file naming the users and groups (default: the default names)")
	runtimeDir := fs.String("runtime-dir", ipc.DefaultRuntimeDir(true), "runtime directory")
	stateDir := fs.String("state-dir", defaultSystemStateDir, "state directory")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: stockaded setup [--config FILE] [--runtime-dir DIR] [--state-dir DIR]")
		return 2
	}
	if err := setup(*configPath, *runtimeDir, *stateDir); err != nil {
		fmt.Fprintln(os.Stderr, "stockaded setup:", err)
		return 1
	}
	return 0
}

func setup(configPath, runtimeDir, stateDir string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("setup creates system users: run it as root")
	}
	if err := configRootOnly(configPath); err != nil {
		return err
	}
	users, err := loadUsers(configPath)
	if err != nil {
		return err
	}
	for _, g := range append(append([]string(nil), users.AgentGroups...), users.AdminGroup) {
		if gid, err := lookupGroup(g); err == nil {
			fmt.Printf("ok group %s (gid %d)\n", g, gid)
			continue
		}
		if err := runSysAdmin("groupadd", "--system", g); err != nil {
			return err
		}
		gid, err := lookupGroup(g)
		if err != nil {
			return err
		}
		fmt.Printf("created group %s (gid %d)\n", g, gid)
	}
	for _, u := range []struct{ name, comment string }{
		{users.BrokerUser, "Stockade broker"}, {users.VerifierUser, "Stockade verifier"},
	} {
		if id, err := lookupUser(u.name); err == nil {
			fmt.Printf("ok user %s (uid %d, gid %d)\n", u.name, id.uid, id.gid)
			continue
		}
		if err := runSysAdmin("useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
			"--shell", "/usr/sbin/nologin", "--comment", u.comment, u.name); err != nil {
			return err
		}
		id, err := lookupUser(u.name)
		if err != nil {
			return err
		}
		fmt.Printf("created user %s (uid %d, gid %d)\n", u.name, id.uid, id.gid)
	}
	multi, err := users.resolve()
	if err != nil {
		return err
	}
	fmt.Printf("ok executor uids %d-%d (no user has one)\n", multi.execFirst, multi.execLast)
	for _, d := range []*string{&runtimeDir, &stateDir} {
		if *d, err = filepath.Abs(*d); err != nil {
			return err
		}
	}
	s := &supervisor{runtimeDir: runtimeDir, stateDir: stateDir, multi: multi}
	for _, d := range s.dirPlan() {
		what, err := ensureDir(d, true)
		if err != nil {
			return err
		}
		fmt.Println(what)
	}
	for _, d := range []string{runtimeDir, stateDir} {
		if err := searchable(d); err != nil {
			return err
		}
	}
	fmt.Println("setup done: start stockaded as root (without --single-user) to run in multi-uid mode")
	return nil
}

// runSysAdmin runs a system administration command from the system's own paths.
func runSysAdmin(name string, args ...string) error {
	var path string
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			path = filepath.Join(dir, name)
			break
		}
	}
	if path == "" {
		return fmt.Errorf("%s not found", name)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %v: %s", name, args, err, out)
	}
	return nil
}
