package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// sqlStatement is how a string literal that holds a statement begins.
var sqlStatement = regexp.MustCompile(`^\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|ALTER|DROP|PRAGMA)\s`)

// TestSQLOnlyInStore checks that no program or library outside lib/store writes SQL
// of its own: one package owns the schema, and every statement's plan can be checked
// in one place (issue 27). Tests may, to set up and inspect rows, and so may the full
// loop's checker (scripts/fullloop), whose invariants read the database with queries
// of their own, independent of the code they check.
func TestSQLOnlyInStore(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	skip := map[string]bool{filepath.Join(root, "lib", "store"): true, filepath.Join(root, "scripts"): true}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[path] || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && sqlStatement.MatchString(s) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: SQL outside lib/store: %.60q", rel, fset.Position(lit.Pos()).Line, s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d files under %s: is the module root right?", checked, root)
	}
}
