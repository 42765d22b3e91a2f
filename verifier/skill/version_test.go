package skill

import (
	"testing"
)

// versionCases seed FuzzVersion too. valid: String() gives the input back.
var versionCases = []struct {
	s     string
	valid bool
}{
	{"0.0.0", true}, {"1.2.3", true}, {"10.20.30", true}, {"1.0.0-alpha", true},
	{"1.0.0-alpha.1", true}, {"1.0.0-0.3.7", true}, {"1.0.0-x.7.z.92", true},
	{"1.0.0-x-y-z.--", true}, {"18446744073709551615.0.0", true},
	{"", false}, {"1", false}, {"1.2", false}, {"1.2.3.4", false}, {"v1.2.3", false},
	{"01.2.3", false}, {"1.02.3", false}, {"1.2.03", false}, {"1.2.3-", false},
	{"1.2.3-01", false}, {"1.2.3-a..b", false}, {"1.2.3-a.", false}, {"1.2.3+build", false},
	{"1.2.3-rc.1+build", false}, {"1.2.3-é", false}, {" 1.2.3", false}, {"1.2.-3", false},
	{"18446744073709551616.0.0", false}, {"1.2.3-99999999999999999999999", false},
}

func TestParseVersion(t *testing.T) {
	t.Parallel()
	for _, c := range versionCases {
		v, err := ParseVersion(c.s)
		switch {
		case c.valid && err != nil:
			t.Errorf("%q: %v", c.s, err)
		case c.valid && v.String() != c.s:
			t.Errorf("%q: String() = %q", c.s, v.String())
		case !c.valid && ReasonOf(err) != ReasonVersion:
			t.Errorf("%q: %v; want %s", c.s, err, ReasonVersion)
		}
	}
}

// TestVersionCompare checks the precedence example of semver.org, §11.
func TestVersionCompare(t *testing.T) {
	t.Parallel()
	order := []string{
		"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0",
	}
	for i, a := range order {
		for j, b := range order {
			va, _ := ParseVersion(a)
			vb, _ := ParseVersion(b)
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := va.Compare(vb); got != want {
				t.Errorf("Compare(%s, %s) = %d; want %d", a, b, got, want)
			}
		}
	}
}

func TestParseID(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"acme.web", "a.b", "acme.web.fetch", "acme-tools.web2", "0.9"} {
		if _, err := ParseID(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{
		"", "acme", "acme..web", ".acme.web", "acme.web.", "acme:web", "acme.web:1", "Acme.web",
		"acme.-web", "acme.web-", "acme.we_b", "acme/web", "a.b.c.d.e", "acme.wéb", "acme. web",
		"acme." + string(make([]byte, 64)),
	} {
		if _, err := ParseID(s); ReasonOf(err) != ReasonID {
			t.Errorf("%q: %v; want %s", s, err, ReasonID)
		}
	}
	if ID("acme.web").Publisher() != "acme" {
		t.Error("Publisher")
	}
}

func TestCheckPath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		reason Reason
	}{
		{"skill.toml", ""}, {"modules/a.wasm", ""}, {"assets/a/b/c-d_e.1.txt", ""},
		{"../x", ReasonPathTraversal}, {"a/../../x", ReasonPathTraversal}, {"a/..", ReasonPathTraversal},
		{"/x", ReasonPathAbsolute}, {"a\\b", ReasonPathBackslash}, {"a\x00b", ReasonPathNUL},
		{"c:x", ReasonPathDrive}, {"C:/x", ReasonPathDrive},
		{"", ReasonPathInvalid}, {"a//b", ReasonPathInvalid}, {"a/", ReasonPathInvalid}, {"./a", ReasonPathInvalid},
		{"a/.b", ReasonPathInvalid}, {"a b", ReasonPathInvalid}, {"a:b", ReasonPathDrive}, {"ab:c", ReasonPathInvalid}, {"café", ReasonPathInvalid},
		{"a/b/c/d/e/f/g/h/i", ReasonPathInvalid}, {string(make([]byte, 256)), ReasonPathInvalid},
	} {
		err := checkPath(c.name)
		if ReasonOf(err) != c.reason {
			t.Errorf("%q: %v; want %q", c.name, err, c.reason)
		}
	}
}
