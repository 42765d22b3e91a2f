package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckDisjoint: the identities of a multi-uid deployment must not
// overlap, and no account of the passwd or group file may hold an id of the
// executor range; a file that cannot be read refuses the deployment too.
func TestCheckDisjoint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	passwd := write("passwd", "root:x:0:0:root:/root:/bin/sh\nstockade-broker:x:990:990::/nonexistent:/usr/sbin/nologin\nstockade-verifier:x:991:991::/nonexistent:/usr/sbin/nologin\n")
	group := write("group", "root:x:0:\nstockade-agents:x:992:alice\nstockade-admin:x:993:\n")
	passwdTaken := write("passwd-taken", "root:x:0:0:root:/root:/bin/sh\nsomeone:x:60650:100::/home/someone:/bin/sh\n")
	groupTaken := write("group-taken", "root:x:0:\nproject:x:60700:alice,bob\n")
	missing := filepath.Join(dir, "missing")

	good := func() *ids {
		return &ids{
			broker: identity{990, 990}, verifier: identity{991, 991},
			execFirst: 60600, execLast: 60799,
			agentGIDs: []uint32{992}, adminGID: 993,
		}
	}
	for _, tc := range []struct {
		name          string
		change        func(*ids)
		passwd, group string
		wantErr       string // "" for none
	}{
		{name: "ok", passwd: passwd, group: group},
		{name: "broker root", change: func(x *ids) { x.broker.uid = 0 }, passwd: passwd, group: group, wantErr: "root"},
		{name: "shared uid", change: func(x *ids) { x.verifier.uid = 990 }, passwd: passwd, group: group, wantErr: "different"},
		{name: "verifier gid in range", change: func(x *ids) { x.verifier.gid = 60600 }, passwd: passwd, group: group, wantErr: "verifier"},
		{name: "admin gid in range", change: func(x *ids) { x.adminGID = 60799 }, passwd: passwd, group: group, wantErr: "admin group"},
		{name: "agent gid in range", change: func(x *ids) { x.agentGIDs = append(x.agentGIDs, 60700) }, passwd: passwd, group: group, wantErr: "agent group"},
		{name: "user in range", passwd: passwdTaken, group: group, wantErr: "someone"},
		{name: "group in range", passwd: passwd, group: groupTaken, wantErr: "project"},
		{name: "passwd unreadable", passwd: missing, group: group, wantErr: "missing"},
		{name: "group unreadable", passwd: passwd, group: missing, wantErr: "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := good()
			if tc.change != nil {
				tc.change(x)
			}
			err := x.checkDisjoint(tc.passwd, tc.group)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("accepted, want an error about %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q, want it to mention %q", err, tc.wantErr)
			}
		})
	}
}
