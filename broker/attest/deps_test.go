package attest

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps the package below the roles: the broker imports it, and
// it may use ipc's types, but no role (broker, executor, verifier) and no
// other package of the module.
func TestImports(t *testing.T) {
	t.Parallel()
	const module = "github.com/stockade-dev/stockade/"
	for _, goos := range []string{"linux", "darwin"} {
		ctx := build.Default
		ctx.GOOS = goos
		pkg, err := ctx.ImportDir(".", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			if strings.HasPrefix(imp, module) && imp != module+"ipc" {
				t.Errorf("%s: imports %s", goos, imp)
			}
			if !strings.HasPrefix(imp, module) && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
				t.Errorf("%s: imports %s, outside the standard library", goos, imp)
			}
		}
	}
}
