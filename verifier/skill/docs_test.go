package skill

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestDocs keeps docs/SKILLS.md true to the code: every Reason declared in
// errors.go is in its table with its class, and the statement shown is the
// canonical encoding Marshal writes.
func TestDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/SKILLS.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), exampleStatementJSON) {
		t.Error("docs/SKILLS.md does not show the canonical example statement")
	}
	rows := map[string]string{} // code → class, from the refusals table
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 {
			continue
		}
		for _, code := range strings.Split(cells[1], ",") {
			code = strings.TrimSpace(code)
			if strings.HasPrefix(code, "`") && strings.HasSuffix(code, "`") {
				rows[strings.Trim(code, "`")] = strings.TrimSpace(cells[2])
			}
		}
	}
	reasons := declaredReasons(t)
	if len(reasons) < 50 {
		t.Fatalf("found only %d reasons in errors.go", len(reasons))
	}
	for _, r := range reasons {
		class, ok := rows[string(r)]
		switch {
		case !ok:
			t.Errorf("reason %s is not in docs/SKILLS.md's table", r)
		case class != string(r.Class()):
			t.Errorf("reason %s: docs say %s, code says %s", r, class, r.Class())
		}
	}
}

// declaredReasons returns the values of the Reason constants in errors.go.
func declaredReasons(t *testing.T) []Reason {
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []Reason
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Reason" {
				continue
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					out = append(out, Reason(s))
				}
			}
		}
	}
	return out
}
