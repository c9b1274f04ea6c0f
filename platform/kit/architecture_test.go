package kit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestServicesKeepToTheKit checks the rules the kit's design rests on in every service's code, since
// a comment would not keep them:
//   - storage never imports HTTP: a service's postgres package returns fault errors, which httpapi
//     maps to statuses in its one table;
//   - service code never handles the performance machinery's memory: request Scratch (lent memory
//     that a handler keeping it past its answer would corrupt) and records decoded into a message's
//     memory (events.DecodeOwned) are the kit's business, behind httpapi.AppendJSON and ingest.Records.
func TestServicesKeepToTheKit(t *testing.T) {
	root := filepath.Join("..", "..", "services")
	forbidden := map[string]string{
		"httpapi.Scratch":    "lends request memory: use httpapi.AppendJSON",
		"events.DecodeOwned": "decodes into a message's memory: use ingest.Records",
		"events.Decode":      "decodes outside the consumer: use ingest.Records",
		"httpapi.RawJSON":    "answers bytes the route may not own: return values or use httpapi.AppendJSON",
	}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if filepath.Base(filepath.Dir(path)) == "postgres" {
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if p == "net/http" || strings.HasSuffix(p, "/platform/httpapi") {
					t.Errorf("%s imports %s: storage never imports HTTP", path, p)
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok {
				if why, bad := forbidden[pkg.Name+"."+sel.Sel.Name]; bad {
					t.Errorf("%s uses %s.%s, which %s", path, pkg.Name, sel.Sel.Name, why)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no service code under %s", root)
	}
}
