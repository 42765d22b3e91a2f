package broker

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stockade-dev/stockade/ipc"
)

func TestIsInterpreter(t *testing.T) {
	for _, p := range []string{"/usr/bin/bash", "/usr/bin/dash", "/usr/bin/python3.11", "/usr/bin/perl5.36.0", "/usr/bin/env",
		"/usr/bin/xargs", "/usr/bin/timeout", "/usr/bin/nice", "/usr/bin/setsid", "/usr/bin/sudo", "/bin/su", "/bin/busybox",
		"/usr/bin/nohup", "/usr/bin/mawk", "/usr/bin/node", "/usr/bin/find"} {
		if !isInterpreter(p) {
			t.Errorf("%s not denied", p)
		}
	}
	for _, p := range []string{"/usr/bin/ls", "/usr/bin/cat", "/usr/bin/echo", "/usr/bin/true", "/usr/bin/shasum", "/usr/bin/envsubst", "/usr/bin/bashbug2x", "/usr/bin/gcc"} {
		if isInterpreter(p) {
			t.Errorf("%s denied", p)
		}
	}
	// Matched on the resolved path: a symlink named innocently is still sh.
	dir := t.TempDir()
	link := filepath.Join(dir, "listing")
	if err := os.Symlink("/bin/sh", link); err != nil {
		t.Fatal(err)
	}
	real, err := resolveExecutable(link)
	if err != nil || !isInterpreter(real) {
		t.Fatalf("symlink to sh resolved to %q (%v), not denied", real, err)
	}
}

func TestScopeArgs(t *testing.T) {
	ws := t.TempDir()
	ws, _ = filepath.EvalSymlinks(ws)
	outside := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "escape")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		ok   bool
	}{
		{[]string{"-l", "sub", "file.txt"}, true},
		{[]string{"sub/new/file"}, true},
		{[]string{ws + "/sub"}, true},
		{[]string{"--output=" + ws + "/out"}, true},
		{[]string{"https://example.com/a/b"}, true},
		{[]string{"s/a/b/"}, true},
		{[]string{"/etc/shadow"}, false},
		{[]string{"../x"}, false},
		{[]string{"sub/../../x"}, false},
		{[]string{"--file=/etc/passwd"}, false},
		{[]string{"-C/etc"}, false},
		{[]string{"-o../x"}, false},
		{[]string{"file:///etc/passwd"}, false},
		{[]string{"FILE:///etc/passwd"}, false},
		{[]string{"escape/secret"}, false},
		{[]string{"escape"}, false},
		{[]string{"~/.ssh/id_rsa"}, false},
		{[]string{".."}, false},
	}
	for _, tt := range tests {
		err := scopeArgs(tt.args, ws)
		if tt.ok && err != nil {
			t.Errorf("%q refused: %v", tt.args, err)
		}
		if !tt.ok && !errors.Is(err, ipc.ErrInvalidInput) {
			t.Errorf("%q accepted (%v)", tt.args, err)
		}
	}
}

func TestPreflight(t *testing.T) {
	allow := []string{"api.example.com", ".cdn.example.org", "10.0.0.1"}
	tests := []struct {
		args []string
		ok   bool
	}{
		{[]string{"https://API.Example.com./v1"}, true},
		{[]string{"https://img.cdn.example.org/x"}, true},
		{[]string{"10.0.0.1:443"}, true},
		{[]string{"--host=api.example.com"}, true},
		{[]string{"-v", "file.txt"}, true},
		{[]string{"-c", `x=a; while :; do x="$x$x"; done`}, true},
		{[]string{"a:b"}, true},
		{[]string{"https://cdn.example.org/x"}, false}, // the suffix rule needs a subdomain
		{[]string{"https://evil.com/?u=api.example.com"}, false},
		{[]string{"evil.com:80"}, false},
		{[]string{"--host=evil.com"}, false},
		{[]string{"http://[::1]:8080/"}, false},
		{[]string{"https://api.example.com.evil.com/"}, false},
	}
	for _, tt := range tests {
		err := preflight(tt.args, allow)
		if tt.ok != (err == nil) {
			t.Errorf("%q: %v", tt.args, err)
		}
	}
}

func TestDangerousEnv(t *testing.T) {
	for _, k := range []string{"LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES", "BASH_ENV", "PYTHONPATH", "NODE_OPTIONS", "GCONV_PATH"} {
		if !dangerousEnv.MatchString(k) {
			t.Errorf("%s allowed", k)
		}
	}
	for _, k := range []string{"GREETING", "LANG_X", "MY_LD"} {
		if dangerousEnv.MatchString(k) {
			t.Errorf("%s refused", k)
		}
	}
}

func TestCheckWorkspace(t *testing.T) {
	protected := []string{"/home/u/.local/state/stockade", "/tmp/stockade-0", "/opt/stockade/bin", "/home/u/stockade.toml"}
	for _, tt := range []struct {
		ws string
		ok bool
	}{
		{"/home/u/project", true},
		{"/tmp/work", true},
		{"/", false},
		{"/etc", false},
		{"/usr/local/src", false},
		{"/proc/1", false},
		{"/home/u", false},                       // holds the state dir and the config
		{"/home/u/.local/state/stockade", false}, // the state dir (attestation key)
		{"/home/u/.local/state/stockade/work/abc/ws", false}, // inside it
		{"/tmp", false},          // holds the runtime dir
		{"/opt/stockade", false}, // holds the binaries
	} {
		err := checkWorkspace(tt.ws, protected, nil)
		if tt.ok != (err == nil) {
			t.Errorf("%s: %v", tt.ws, err)
		}
	}
	if err := checkWorkspace("/srv/a", protected, []string{"/home/u"}); err == nil {
		t.Error("a workspace outside the roots was accepted")
	}
	if err := checkWorkspace("/home/u/project/x", protected, []string{"/home/u/project"}); err != nil {
		t.Errorf("inside a root: %v", err)
	}
}
