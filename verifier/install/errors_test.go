package install

import "testing"

// TestReasonTampering: the release's own files being wrong is tampering;
// the skills directory failing, or a statement that does not parse, is not;
// a Reason this table does not know fails closed.
func TestReasonTampering(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r    Reason
		want bool
	}{
		{ReasonRootUnsafe, false},
		{ReasonIO, false},
		{ReasonInvalid, false},
		{ReasonNotInstalled, true},
		{ReasonMissing, true},
		{ReasonExtra, true},
		{ReasonNotRegular, true},
		{ReasonOwner, true},
		{ReasonMode, true},
		{ReasonSize, true},
		{ReasonDigest, true},
		{Reason("install.something_new"), true},
	} {
		if got := tc.r.Tampering(); got != tc.want {
			t.Errorf("%s.Tampering() = %v; want %v", tc.r, got, tc.want)
		}
	}
}
