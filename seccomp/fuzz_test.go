package seccomp

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// FuzzNamedProfiles is the differential test of the named profiles: for a
// system call, random or not, the compiled program run by the interpreter
// must give the action the profile's rule table gives (referenceDecide).
// The seeds are profileCases. Run it with:
//
//	go test ./seccomp -run '^$' -fuzz FuzzNamedProfiles
func FuzzNamedProfiles(f *testing.F) {
	names := Names()
	type compiledProfile struct {
		p     *Profile
		progs []*Program // by Arches() index
	}
	var profiles []compiledProfile
	for _, name := range names {
		cp := compiledProfile{}
		for _, arch := range Arches() {
			p, prog := namedProgram(f, name, arch)
			cp.p, cp.progs = p, append(cp.progs, prog)
		}
		profiles = append(profiles, cp)
	}
	for _, c := range profileCases {
		for ai, arch := range Arches() {
			nr, err := SyscallNumber(arch, c.syscall)
			if err != nil {
				continue
			}
			a := c.args
			f.Add(uint8(slices.Index(names, c.profile)), uint8(ai), uint32(0), uint32(nr), a[0], a[1], a[2], a[3], a[4], a[5])
		}
	}
	f.Add(uint8(0), uint8(0), uint32(0), uint32(0x40000027), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0))
	f.Add(uint8(2), uint8(4|1), uint32(0x40000003), uint32(11), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, profile, sel uint8, audit, nr uint32, a0, a1, a2, a3, a4, a5 uint64) {
		cp := profiles[int(profile)%len(profiles)]
		ai := int(sel) % 2
		prog := cp.progs[ai]
		callAudit := arches[Arches()[ai]].audit
		switch {
		case sel&4 != 0:
			callAudit = audit // any value at all
		case sel&2 != 0:
			callAudit = arches[Arches()[1-ai]].audit // the other architecture
		}
		args := [6]uint64{a0, a1, a2, a3, a4, a5}
		for _, n := range []uint32{nr, nr % 512} {
			checkAgainstReference(t, cp.p, prog, Data{Nr: int32(n), Arch: callAudit, Args: args})
		}
	})
}

// FuzzCompiler is the differential test of the compiler itself: random
// profiles (from the seed) must compile, and their programs must agree
// with their rule tables. Run it with:
//
//	go test ./seccomp -run '^$' -fuzz FuzzCompiler
func FuzzCompiler(f *testing.F) {
	for _, seed := range []struct {
		seed uint64
		size uint16
	}{{0, 0}, {1, 1}, {2, 8}, {3, 60}, {4, 250}, {5, 399}, {6, 120}} {
		f.Add(seed.seed, seed.size)
	}
	f.Fuzz(func(t *testing.T, seed uint64, size uint16) {
		r := rand.New(rand.NewPCG(seed, uint64(size)))
		arch := Arches()[seed%2]
		p := randomProfile(r, arch, int(size%400))
		prog, err := p.Compile(arch)
		if errors.Is(err, ErrInvalidProgram) && len(p.Rules) > 150 {
			return // more than the kernel's 4096 instructions
		}
		if err != nil {
			t.Fatal(err)
		}
		names := SyscallNames(arch)
		for range 300 {
			name := names[r.IntN(len(names))]
			nr := arches[arch].names[name]
			if r.IntN(8) == 0 {
				nr = int(int32(r.Uint32()))
			}
			checkAgainstReference(t, p, prog, Data{Nr: int32(nr), Arch: arches[arch].audit, Args: randomArgs(r, p, name)})
		}
	})
}
