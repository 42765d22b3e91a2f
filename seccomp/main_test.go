package seccomp

import (
	"os"
	"testing"
)

// childEnv marks a re-executed test binary. Installing a filter cannot be
// undone, so the tests that install one start this binary again (with
// -test.run naming the test, and childEnv holding a JSON childSpec), and
// the child plays its role here instead of running tests.
const childEnv = "STOCKADE_SECCOMP_TEST_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	os.Exit(m.Run())
}
