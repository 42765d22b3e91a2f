package hostcall

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps the package below the roles: the broker imports it;
// it may use policy (canonical hosts) and bbolt, and nothing else outside
// the standard library.
func TestImports(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{
		"github.com/stockade-dev/stockade/policy": true,
		"go.etcd.io/bbolt":                        true,
		"go.etcd.io/bbolt/errors":                 true,
	}
	for _, goos := range []string{"linux", "darwin"} {
		ctx := build.Default
		ctx.GOOS = goos
		pkg, err := ctx.ImportDir(".", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			first := strings.SplitN(imp, "/", 2)[0]
			if strings.Contains(first, ".") && !allowed[imp] {
				t.Errorf("%s: imports %s", goos, imp)
			}
		}
	}
}
