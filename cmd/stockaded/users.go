package main

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Users is the part of the configuration file the supervisor reads: who
// the roles run as in multi-uid mode. The file is the operator's (root's);
// the broker reads the rest of it, strictly, and accepts these keys too.
type Users struct {
	// BrokerUser and VerifierUser run the two daemons; each has its own
	// primary group of the same name (stockaded setup makes them).
	BrokerUser   string `toml:"broker_user"`
	VerifierUser string `toml:"verifier_user"`
	// ExecutorUIDRange is [first, last]: every executor gets a uid of its
	// own from it, with gid equal to the uid and no supplementary groups.
	// No user of the system may have a uid in it.
	ExecutorUIDRange []uint32 `toml:"executor_uid_range"`
	// AgentGroups: root and members of these groups may call the broker.
	AgentGroups []string `toml:"agent_groups"`
	// AdminGroup: root and members may use admin.sock.
	AdminGroup string `toml:"admin_group"`
	// AutoActivate lets the verifier make an update active without an
	// admin when it is signed by the skill's pinned key, asks for no new
	// capability and passes the audit (both modes).
	AutoActivate bool `toml:"auto_activate"`
}

// systemd hands uids of this range to DynamicUser services without an
// /etc/passwd entry: executors may not use them.
const (
	systemdDynamicFirst = 61184
	systemdDynamicLast  = 65519
)

// DefaultUsers are the names stockaded setup creates.
func DefaultUsers() Users {
	return Users{
		BrokerUser: "stockade-broker", VerifierUser: "stockade-verifier",
		ExecutorUIDRange: []uint32{60600, 60799},
		AgentGroups:      []string{"stockade-agents"}, AdminGroup: "stockade-admin",
	}
}

// loadUsers reads the user keys of the configuration file (defaults for
// those absent; other keys are the broker's and ignored here).
func loadUsers(path string) (Users, error) {
	u := DefaultUsers()
	if path == "" {
		return u, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return u, err
	}
	var f Users
	if err := toml.Unmarshal(data, &f); err != nil {
		return u, fmt.Errorf("%s: %w", path, err)
	}
	if f.BrokerUser != "" {
		u.BrokerUser = f.BrokerUser
	}
	if f.VerifierUser != "" {
		u.VerifierUser = f.VerifierUser
	}
	if f.ExecutorUIDRange != nil {
		u.ExecutorUIDRange = f.ExecutorUIDRange
	}
	if f.AgentGroups != nil {
		u.AgentGroups = f.AgentGroups
	}
	if f.AdminGroup != "" {
		u.AdminGroup = f.AdminGroup
	}
	u.AutoActivate = f.AutoActivate
	return u, u.check()
}

func (u Users) check() error {
	r := u.ExecutorUIDRange
	switch {
	case len(r) != 2:
		return errors.New("executor_uid_range must be [first, last]")
	case r[0] < 1000 || r[1] < r[0]:
		return fmt.Errorf("executor_uid_range [%d, %d]: first must be ≥ 1000 and last ≥ first", r[0], r[1])
	case r[1]-r[0] >= 65536:
		return errors.New("executor_uid_range holds more than 65536 uids")
	case r[0] <= systemdDynamicLast && r[1] >= systemdDynamicFirst:
		return fmt.Errorf("executor_uid_range [%d, %d] overlaps systemd's DynamicUser range [%d, %d]: a service's uid could be shared or killed", r[0], r[1], systemdDynamicFirst, systemdDynamicLast)
	case u.BrokerUser == u.VerifierUser:
		return errors.New("broker_user and verifier_user must differ")
	case len(u.AgentGroups) == 0:
		return errors.New("agent_groups is empty: nobody but root could call the broker")
	}
	return nil
}

// ids are the numeric identities of a multi-uid deployment, resolved once at
// start-up.
type ids struct {
	broker, verifier identity
	execFirst        uint32
	execLast         uint32
	agentGIDs        []uint32
	adminGID         uint32
}

// identity is a role's uid and primary gid.
type identity struct{ uid, gid uint32 }

// resolve turns names into ids, and refuses a deployment whose identities
// overlap (checkDisjoint, against the system's /etc/passwd and /etc/group).
func (u Users) resolve() (*ids, error) {
	var out ids
	var err error
	if out.broker, err = lookupUser(u.BrokerUser); err != nil {
		return nil, err
	}
	if out.verifier, err = lookupUser(u.VerifierUser); err != nil {
		return nil, err
	}
	for _, g := range u.AgentGroups {
		gid, err := lookupGroup(g)
		if err != nil {
			return nil, err
		}
		out.agentGIDs = append(out.agentGIDs, gid)
	}
	if out.adminGID, err = lookupGroup(u.AdminGroup); err != nil {
		return nil, err
	}
	out.execFirst, out.execLast = u.ExecutorUIDRange[0], u.ExecutorUIDRange[1]
	if err := out.checkDisjoint("/etc/passwd", "/etc/group"); err != nil {
		return nil, err
	}
	return &out, nil
}

// checkDisjoint refuses identities that overlap: root, the two daemons, the
// admin and agent groups and the executor range must all differ, and no
// account of the passwd or group file may have an id in the range (an
// executor's gid is its uid: a group with that gid would give it the
// group's files).
func (x *ids) checkDisjoint(passwdPath, groupPath string) error {
	inRange := func(v uint32) bool { return v >= x.execFirst && v <= x.execLast }
	switch {
	case x.broker.uid == 0 || x.verifier.uid == 0 || x.broker.gid == 0 || x.verifier.gid == 0:
		return errors.New("the broker and verifier users may not be root or in group root")
	case x.broker.uid == x.verifier.uid || x.broker.gid == x.verifier.gid:
		return errors.New("the broker and the verifier must have different uids and groups")
	case inRange(x.broker.uid) || inRange(x.verifier.uid) || inRange(x.broker.gid) || inRange(x.verifier.gid):
		return errors.New("executor_uid_range overlaps the broker's or the verifier's ids")
	case inRange(x.adminGID) || slices.ContainsFunc(x.agentGIDs, inRange):
		return errors.New("executor_uid_range holds the admin group's or an agent group's gid: executors (gid = uid) would be its members")
	}
	for _, f := range []struct{ path, what string }{{passwdPath, "users"}, {groupPath, "groups"}} {
		taken, err := accountsInRange(f.path, x.execFirst, x.execLast)
		if err != nil {
			return fmt.Errorf("checking executor_uid_range: %w", err)
		}
		if len(taken) > 0 {
			return fmt.Errorf("executor_uid_range [%d, %d] holds the ids of existing %s %v (%s): executors need ids nobody else has", x.execFirst, x.execLast, f.what, taken, f.path)
		}
	}
	return nil
}

func lookupUser(name string) (identity, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return identity{}, fmt.Errorf("user %q: %w (run stockaded setup)", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return identity{}, fmt.Errorf("user %q has non-numeric ids", name)
	}
	return identity{uint32(uid), uint32(gid)}, nil
}

func lookupGroup(name string) (uint32, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, fmt.Errorf("group %q: %w (run stockaded setup)", name, err)
	}
	gid, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("group %q has a non-numeric id", name)
	}
	return uint32(gid), nil
}

// accountsInRange lists the names of the entries of an /etc/passwd or
// /etc/group file whose id (the third field) is in [first, last]. A file
// that cannot be read is an error: the check would otherwise pass unseen.
func accountsInRange(path string, first, last uint32) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) < 3 {
			continue
		}
		if v, err := strconv.ParseUint(f[2], 10, 32); err == nil && uint32(v) >= first && uint32(v) <= last {
			out = append(out, f[0])
		}
	}
	return out, nil
}
