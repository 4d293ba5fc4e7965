package testkit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exported returns the exported constants of the package in dir, by the
// name of their type (as written), and every exported name it declares.
func exported(t *testing.T, dir string) (consts map[string][]string, names map[string]bool) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts, names = map[string][]string{}, map[string]bool{}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok {
					continue
				}
				for _, spec := range g.Specs {
					switch s := spec.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = n.IsExported()
							if g.Tok != token.CONST || !n.IsExported() {
								continue
							}
							typ := ""
							switch {
							case s.Type != nil:
								typ = types(s.Type)
							case len(s.Values) == 1:
								if sel, ok := s.Values[0].(*ast.SelectorExpr); ok {
									typ = types(sel.X) + "." + strings.SplitN(sel.Sel.Name, "_", 2)[0]
								}
							}
							consts[typ] = append(consts[typ], n.Name)
						}
					case *ast.TypeSpec:
						names[s.Name.Name] = s.Name.IsExported()
					}
				}
			}
		}
	}
	return consts, names
}

func types(e ast.Expr) string {
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// TestTestkitNamesEveryConstantATestUses keeps testkit's aliases in step
// with the broker: every error code, command type, transaction state, event
// kind and settlement rule the broker declares is reachable from testkit,
// so that a test needs no other import.
func TestTestkitNamesEveryConstantATestUses(t *testing.T) {
	consts, _ := exported(t, filepath.Join("..", "broker"))
	_, ours := exported(t, ".")
	for _, typ := range []string{"pb.ServerError", "CommandType", "TxnStatus", "EventKind", "Rule"} {
		if len(consts[typ]) == 0 {
			t.Errorf("the broker declares no constant of type %s: the test reads it wrong", typ)
		}
		for _, name := range consts[typ] {
			if !ours[name] {
				t.Errorf("broker.%s (%s) has no testkit alias: add it to types.go", name, typ)
			}
		}
	}
}
