package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cedar-policy/cedar-go/types"
)

// checkAgainstSchema validates a mapped call's entities and every one of
// its Cedar requests against the schema, so that what strict validation
// promised about policies holds for the values they meet.
func checkAgainstSchema(t testing.TB, c *call) {
	t.Helper()
	v := loadedSchema().validator
	ents := []types.Entity{c.entities.agent, c.entities.tool}
	if c.entities.hasSkill {
		ents = append(ents, c.entities.skill)
	}
	for _, a := range c.entities.actions {
		ents = append(ents, a)
	}
	for _, e := range ents {
		if err := v.Entity(e); err != nil {
			t.Fatalf("entity %v does not conform to the schema: %v", e.UID, err)
		}
	}
	for _, a := range c.actions {
		if err := v.Request(types.Request{Principal: c.principal, Action: a, Resource: c.resource, Context: c.context}); err != nil {
			t.Fatalf("request for %v does not conform to the schema: %v", a, err)
		}
	}
}

func TestMappingConformsToSchema(t *testing.T) {
	t.Parallel()
	ws := mustPath(t, t.TempDir())
	full := localCall(t, ws)
	full.Actions = Capabilities()
	full.Tool.Capabilities = Capabilities()
	full.Context.EgressHosts = []Host{mustHost(t, "example.com"), mustHost(t, "::1")}
	full.Context.Budget = Budget{CallsMax: 1, InFlight: 2, InFlightMax: 3, RateTokens: 4, CPUMillisUsed: 5, CPUMillisMax: 6, OutputBytesUsed: 7, OutputBytesMax: 8}
	skill := localCall(t, ws)
	skill.Tool = Tool{Name: "notes.search", Kind: KindSkill, Tier: TierA, Egress: EgressStrict, Capabilities: []Capability{StorageWrite}}
	skill.Skill = &Skill{Publisher: "acme", Name: "notes", Version: "1.0.0", Trust: TrustQuarantined, Capabilities: []Capability{StorageWrite, ChannelSend}}
	skill.Actions = []Capability{StorageWrite}
	skill.Context.Tier, skill.Context.Program, skill.Context.Argv = TierA, Path{}, nil
	for _, r := range []*Request{localCall(t, ws), full, skill} {
		c, err := buildCall(loadedSchema(), nil, r)
		if err != nil {
			t.Fatal(err)
		}
		checkAgainstSchema(t, c)
	}
}

// TestContextValues checks the values policies see, one by one.
func TestContextValues(t *testing.T) {
	t.Parallel()
	ws := mustPath(t, t.TempDir())
	r := localCall(t, ws)
	r.Context.EgressHosts = []Host{mustHost(t, "Example.com."), mustHost(t, "[::ffff:10.1.2.3]")}
	r.Context.Now = time.Date(2026, 3, 2, 23, 59, 30, 0, time.FixedZone("X", 3600))
	r.Context.Budget.CallsMax = 5
	c, err := buildCall(loadedSchema(), nil, r)
	if err != nil {
		t.Fatal(err)
	}
	get := func(k string) types.Value {
		v, ok := c.context.Get(types.String(k))
		if !ok {
			t.Fatalf("context has no %s", k)
		}
		return v
	}
	ip, _ := types.ParseIPAddr("10.1.2.3")
	checks := []struct {
		key  string
		want types.Value
	}{
		{"egress_hosts", types.NewSet(types.String("example.com"))},
		{"egress_ips", types.NewSet(ip)},
		{"workspace", types.String(ws.String())},
		{"paths_in_workspace", types.True},
		{"argv_digest", types.String(ArgvDigest([]string{"ls", "-l"}))},
		{"now", types.NewDatetime(time.Date(2026, 3, 2, 22, 59, 30, 0, time.UTC))},
		{"time_of_day", types.NewDuration(23*time.Hour + 59*time.Minute + 30*time.Second)},
		{"capabilities", types.NewSet(types.NewEntityUID(typeCapability, "process.exec"))},
		{"tier", types.NewEntityUID(typeTier, "C")},
	}
	for _, ch := range checks {
		if got := get(ch.key); !got.Equal(ch.want) {
			t.Errorf("context.%s = %v, want %v", ch.key, got, ch.want)
		}
	}
	budget := get("budget").(types.Record)
	if v, ok := budget.Get("calls_max"); !ok || v != types.Long(5) {
		t.Errorf("budget.calls_max = %v %v", v, ok)
	}
	if _, ok := budget.Get("cpu_ms_max"); ok {
		t.Error("an unset limit is present")
	}
	if got := ArgvDigest([]string{"git", "status"}); got != "ef62ff998f8a62dc7654ed02e950d0dddd7c5a8a31a8802246e36e633274f4df" {
		t.Errorf("ArgvDigest = %s (printf 'git\\0status\\0' | sha256sum)", got)
	}
	if ArgvDigest(nil) != "" {
		t.Error("empty argv has a digest")
	}
	// The agent's groups are its parents and its groups attribute.
	if !c.entities.agent.Parents.Contains(types.NewEntityUID(typeGroup, "local")) {
		t.Error("agent not in Group::\"local\"")
	}
}

var permitAllSet = func() *policySet {
	s, err := compileFiles("fuzz", []policyFile{{name: "all.cedar", data: []byte(`@id("all") permit (principal, action, resource);`)}})
	if err != nil {
		panic(err)
	}
	return s
}()

var defaultSet = func() *policySet {
	s, err := load("")
	if err != nil {
		panic(err)
	}
	return s
}()

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// FuzzRequestMapping feeds garbage through the Request-to-Cedar mapping:
// it must not panic; a Request it refuses must be denied even by a
// permit-all set; one it accepts must conform to the schema and be allowed
// by permit-all; the default set must decide it as full evaluation does,
// and may allow only what its text says.
func FuzzRequestMapping(f *testing.F) {
	type seed struct {
		name, groups, tool, kind, tier, egress, toolCaps, actions, skill, ctxTier, hosts, paths, argv string
		uid                                                                                           uint32
		calls, budget                                                                                 int64
	}
	for _, s := range []seed{
		{"me", "local", "process.run", "process", "C", "none", "process.exec,fs.write", "process.exec", "", "C", "", "out.txt", "ls,-l", 1000, 0, 0},
		{"me", "local", "process.run", "process", "C", "none", "process.exec", "process.exec,interpreter.run", "", "C", "", "", "sh", 1000, 3, 5},
		{"coder", "dev,ops", "notes.search", "skill", "A", "strict", "storage.write", "storage.write", "acme/notes/1.0/active/storage.write", "A", "api.example.com,10.0.0.1", "", "", 7, 1, 1},
		{"", "", "", "", "", "", "", "", "", "", "", "", "", 0, -1, -1},
		{"me\x00", "local,,x", "t", "process", "c", "none", "root", "call", "a/b", "B", "Example.COM.,[::1]", "../../etc/passwd", "a\x00b", 0, 1 << 62, 1 << 62},
	} {
		f.Add(s.name, s.groups, s.tool, s.kind, s.tier, s.egress, s.toolCaps, s.actions, s.skill, s.ctxTier, s.hosts, s.paths, s.argv, s.uid, s.calls, s.budget)
	}
	ws := Path{"/nonexistent-stockade-workspace"}
	f.Fuzz(func(t *testing.T, name, groups, tool, kind, tier, egress, toolCaps, actions, skill, ctxTier, hosts, paths, argv string, uid uint32, calls, budget int64) {
		req := &Request{
			Principal: Principal{Name: name, UID: uid, Groups: splitList(groups)},
			Tool: Tool{Name: tool, Kind: ToolKind(kind), Tier: Tier(tier), Egress: Egress(egress),
				Capabilities: toCapabilities(splitList(toolCaps))},
			Actions: toCapabilities(splitList(actions)),
			Context: Context{
				RunID: name, CallsUsed: calls, Tier: Tier(ctxTier), Workspace: ws, Argv: splitList(argv),
				Now: time.Unix(calls%(1<<33), 0), Budget: Budget{CallsMax: budget, CPUMillisUsed: budget},
			},
		}
		if skill != "" {
			parts := append(strings.SplitN(skill, "/", 5), "", "", "", "")
			req.Skill = &Skill{Publisher: parts[0], Name: parts[1], Version: parts[2], Trust: Trust(parts[3]),
				Capabilities: toCapabilities(splitList(parts[4]))}
		}
		for _, h := range splitList(hosts) {
			if host, err := ParseHost(h); err == nil {
				req.Context.EgressHosts = append(req.Context.EgressHosts, host)
			}
		}
		for _, p := range splitList(paths) {
			// Lexical only: fuzzing must not depend on the file system.
			if !strings.Contains(p, "\x00") && len(p) < 256 {
				req.Context.Paths = append(req.Context.Paths, Path{cleanJoin(ws.p, p)})
			}
		}

		c, err := buildCall(loadedSchema(), nil, req) // no recover: a panic fails
		permitAll := (&Engine{})
		permitAll.set.Store(permitAllSet)
		d := permitAll.Decide(req)
		if err != nil {
			if d.Allowed() {
				t.Fatalf("refused request (%v) allowed by permit-all", err)
			}
			return
		}
		checkAgainstSchema(t, c)
		if !d.Allowed() || !slices.Equal(d.Policies(), []string{"all"}) {
			t.Fatalf("accepted request denied by permit-all: %v %q", d, d.Reasons())
		}

		def := defaultSet.decide(c)
		if allow, ids := decideFull(defaultSet, c); def.Allowed() != allow || !slices.Equal(def.Policies(), ids) {
			t.Fatalf("default set: decide says %v, full evaluation allow=%v %v", def, allow, ids)
		}
		if !def.Allowed() {
			return
		}
		// The default set allows only the local user's non-interpreter
		// commands in Tier C, without network, inside a workspace.
		ok := slices.Contains(req.Principal.Groups, "local") &&
			req.Tool.Kind == KindProcess && req.Tool.Egress == EgressNone &&
			req.Context.Tier == TierC && len(req.Context.EgressHosts) == 0
		for _, a := range req.Actions {
			ok = ok && (a == ProcessExec || a == FSWrite) && slices.Contains(req.Tool.Capabilities, a)
		}
		for _, p := range req.Context.Paths {
			ok = ok && p.Within(ws)
		}
		if !ok {
			t.Fatalf("default set allowed %+v: %v", req, def)
		}
	})
}

// cleanJoin joins a relative or absolute p to dir lexically (fuzzing only).
func cleanJoin(dir, p string) string {
	if !strings.HasPrefix(p, "/") {
		p = dir + "/" + p
	}
	var out []string
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, c)
		}
	}
	return "/" + strings.Join(out, "/")
}

// The entity cache must give back exactly what building would, also for
// field lists that a careless key would confuse.
func TestEntityCacheKeys(t *testing.T) {
	t.Parallel()
	s := loadedSchema()
	c := newEntityCache()
	principals := []Principal{
		{Name: "ab", UID: 1, Groups: []string{"c"}},
		{Name: "a", UID: 1, Groups: []string{"bc"}},
		{Name: "a", UID: 1, Groups: []string{"b", "c"}},
		{Name: "a", UID: 1, Groups: nil},
		{Name: "a", UID: 2, Groups: nil},
		{Name: "a", UID: 1, Groups: []string{""}}, // refused, never cached
	}
	tools := []struct {
		t  Tool
		sk *Skill
	}{
		{Tool{Name: "t", Kind: KindProcess, Tier: TierC, Egress: EgressNone, Capabilities: []Capability{ProcessExec}}, nil},
		{Tool{Name: "t", Kind: KindProcess, Tier: TierC, Egress: EgressNone, Capabilities: []Capability{ProcessExec, FSWrite}}, nil},
		{Tool{Name: "t", Kind: KindProcess, Tier: TierB, Egress: EgressNone}, nil},
		{Tool{Name: "t", Kind: KindProcess, Tier: TierC, Egress: EgressStrict}, nil},
		{Tool{Name: "t", Kind: KindSkill, Tier: TierA, Egress: EgressNone}, &Skill{Publisher: "p", Name: "n", Trust: TrustActive}},
		{Tool{Name: "t", Kind: KindSkill, Tier: TierA, Egress: EgressNone}, &Skill{Publisher: "p", Name: "n", Trust: TrustRevoked}},
		{Tool{Name: "t", Kind: KindSkill, Tier: TierA, Egress: EgressNone}, &Skill{Publisher: "p", Name: "n", Version: "2", Trust: TrustActive}},
		{Tool{Name: "t", Kind: KindSkill, Tier: TierA, Egress: EgressNone}, nil}, // refused
	}
	for round := range 2 {
		for _, p := range principals {
			got, gotErr := c.agent(&p)
			want, wantErr := buildAgent(&p)
			if (gotErr == nil) != (wantErr == nil) || !sameEntity(t, got, want) {
				t.Errorf("round %d, %+v: cached %v %v, built %v %v", round, p, got, gotErr, want, wantErr)
			}
		}
		for _, tt := range tools {
			got, gotErr := c.resource(s, &tt.t, tt.sk)
			want, wantErr := buildResource(s, &tt.t, tt.sk)
			if (gotErr == nil) != (wantErr == nil) || !sameEntity(t, got.tool, want.tool) || !sameEntity(t, got.skill, want.skill) || got.hasSkill != want.hasSkill {
				t.Errorf("round %d, %+v %+v: cached %v, built %v", round, tt.t, tt.sk, got, want)
			}
		}
	}
}

func sameEntity(t *testing.T, a, b types.Entity) bool {
	t.Helper()
	ja, err := a.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	jb, err := b.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

// The fixed part of a call comes from the cache exactly as building it
// would make it, for keys a careless encoding would confuse, and a cached
// one is still refused with a call tier that does not fit the tool.
func TestEntityCacheStatic(t *testing.T) {
	t.Parallel()
	s := loadedSchema()
	c := newEntityCache()
	principals := []Principal{
		{Name: "a", UID: 1, Groups: []string{"b", "c"}},
		{Name: "a", UID: 1, Groups: []string{"bc"}},
		{Name: "a", UID: 1, Groups: []string{"b"}},
		{Name: "a", UID: 1},
		{Name: "", UID: 1}, // refused
	}
	process := Tool{Name: "t", Kind: KindProcess, Tier: TierC, Egress: EgressNone, Capabilities: []Capability{ProcessExec}}
	skillTool := Tool{Name: "t", Kind: KindSkill, Tier: TierA, Egress: EgressNone}
	tools := []struct {
		t  Tool
		sk *Skill
	}{
		{process, nil},
		{Tool{Name: "t", Kind: KindProcess, Tier: TierC, Egress: EgressNone}, nil},
		{skillTool, &Skill{Publisher: "p", Name: "n", Trust: TrustActive}},
		{skillTool, &Skill{Publisher: "p", Name: "n", Trust: TrustActive, Capabilities: []Capability{ProcessExec}}},
		{skillTool, nil}, // refused
	}
	actions := [][]Capability{
		nil,
		{ProcessExec},
		{ProcessExec, FSWrite},
		{FSWrite, ProcessExec},
		{ProcessExec, ProcessExec}, // refused
		{"fs.read"},                // refused
	}
	for round := range 2 {
		for _, p := range principals {
			for _, tt := range tools {
				for _, a := range actions {
					req := &Request{Principal: p, Tool: tt.t, Skill: tt.sk, Actions: a, Context: Context{Tier: tt.t.Tier}}
					got, gotErr := c.static(s, req)
					want, wantErr := buildStatic(s, nil, req)
					if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
						t.Fatalf("round %d, %+v: cached error %v, built %v", round, req, gotErr, wantErr)
					}
					if wantErr == nil {
						checkSameStatic(t, got, want)
					}
				}
			}
		}
	}
	// A hit is a hit on the tool, not on the call's tier.
	req := &Request{Principal: principals[0], Tool: process, Actions: actions[1], Context: Context{Tier: TierC}}
	if _, err := c.static(s, req); err != nil {
		t.Fatal(err)
	}
	req.Context.Tier = TierB
	if _, err := c.static(s, req); !errors.Is(err, ErrRequest) {
		t.Fatalf("a Tier C tool run in Tier B from the cache: %v", err)
	}
}

func checkSameStatic(t *testing.T, got, want *callStatic) {
	t.Helper()
	// Ancestors come in the order of Go's maps: compare them as sets.
	sameTarget := func(a, b target) bool {
		return a.uid == b.uid && len(a.anc) == len(b.anc) &&
			!slices.ContainsFunc(a.anc, func(u types.EntityUID) bool { return !slices.Contains(b.anc, u) })
	}
	switch {
	case !sameEntity(t, got.entities.agent, want.entities.agent),
		!sameEntity(t, got.entities.tool, want.entities.tool),
		got.entities.hasSkill != want.entities.hasSkill,
		!sameEntity(t, got.entities.skill, want.entities.skill),
		got.principal != want.principal, got.resource != want.resource,
		!slices.Equal(got.actions, want.actions),
		!got.asked.Equal(want.asked),
		!sameTarget(got.principalTarget, want.principalTarget),
		!sameTarget(got.resourceTarget, want.resourceTarget),
		!slices.EqualFunc(got.actionTargets, want.actionTargets, sameTarget):
		t.Fatalf("cached call part of %v -> %v %v differs from the built one", got.principal, got.resource, got.actions)
	}
}

// The context and budget records are built from maps that are used again:
// that holds only while types.NewRecord copies the map it is given.
func TestNewRecordCopies(t *testing.T) {
	t.Parallel()
	m := types.RecordMap{"a": types.Long(1)}
	r := types.NewRecord(m)
	m["a"] = types.Long(2)
	m["b"] = types.Long(3)
	if v, _ := r.Get("a"); r.Len() != 1 || v != types.Long(1) {
		t.Fatalf("types.NewRecord keeps the map it is given: %v", r)
	}
	clear(m)
	if r.Len() != 1 {
		t.Fatalf("types.NewRecord keeps the map it is given: %v", r)
	}
}

// ArgvDigest hashes short command lines on the stack and long ones
// streamed; both are `printf '%s\0' "$@" | sha256sum`.
func TestArgvDigestLengths(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 511, 1022, 1023, 1024, 1025, 4096} {
		for _, argv := range [][]string{
			{strings.Repeat("x", n)},
			{"a", strings.Repeat("y", n), ""},
			strings.Split(strings.Repeat("z", n), ""),
		} {
			h := sha256.New()
			for _, a := range argv {
				h.Write([]byte(a + "\x00"))
			}
			if got, want := ArgvDigest(argv), hex.EncodeToString(h.Sum(nil)); got != want {
				t.Errorf("%d bytes in %d arguments: %s, want %s", n, len(argv), got, want)
			}
		}
	}
}
