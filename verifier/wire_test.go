package verifier

import (
	"fmt"
	"testing"

	"github.com/stockade-dev/stockade/ipc"
	"github.com/stockade-dev/stockade/verifier/install"
)

// TestInstallReasons: resolve (isTampering) and the wire (reasonOf) agree on
// which refusals of install.Load are tampering, through wrapping; the others
// are the store's fault or an internal error.
func TestInstallReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		r      install.Reason
		tamper bool
		wire   ipc.Reason
	}{
		{install.ReasonRootUnsafe, false, ipc.ReasonStore},
		{install.ReasonIO, false, ipc.ReasonStore},
		{install.ReasonInvalid, false, ipc.ReasonInternal},
		{install.ReasonNotInstalled, true, ipc.ReasonTampered},
		{install.ReasonMissing, true, ipc.ReasonTampered},
		{install.ReasonExtra, true, ipc.ReasonTampered},
		{install.ReasonNotRegular, true, ipc.ReasonTampered},
		{install.ReasonOwner, true, ipc.ReasonTampered},
		{install.ReasonMode, true, ipc.ReasonTampered},
		{install.ReasonSize, true, ipc.ReasonTampered},
		{install.ReasonDigest, true, ipc.ReasonTampered},
	} {
		err := fmt.Errorf("load: %w", &install.Error{Reason: tc.r, Path: "x"})
		if got := isTampering(err); got != tc.tamper {
			t.Errorf("isTampering(%s) = %v; want %v", tc.r, got, tc.tamper)
		}
		if got := reasonOf(err); got != tc.wire {
			t.Errorf("reasonOf(%s) = %s; want %s", tc.r, got, tc.wire)
		}
	}
	if isTampering(fmt.Errorf("not an install error")) {
		t.Error("isTampering(plain error) = true")
	}
}
