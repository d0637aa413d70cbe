package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds every function of the module's non-test Go files,
// counted from its func line to its closing brace.
const maxFuncLines = 80

// moduleRoot is the nearest directory above the working directory with a go.mod.
func moduleRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = up
	}
}

// longFuncs lists the functions of the non-test Go files under root longer
// than limit lines, as "file:line: name is N lines", and counts the files.
func longFuncs(root string, limit int) (long []string, files int, err error) {
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, path)
		ast.Inspect(f, func(n ast.Node) bool {
			var fname string
			switch fn := n.(type) {
			case *ast.FuncDecl:
				fname = fn.Name.Name
				if fn.Recv != nil && len(fn.Recv.List) == 1 {
					fname = recvName(fn.Recv.List[0].Type) + "." + fname
				}
			case *ast.FuncLit:
				fname = "func literal"
			default:
				return true
			}
			start, end := fset.Position(n.Pos()).Line, fset.Position(n.End()).Line
			if lines := end - start + 1; lines > limit {
				long = append(long, fmt.Sprintf("%s:%d: %s is %d lines", rel, start, fname, lines))
			}
			return true
		})
		return nil
	})
	return long, files, err
}

// recvName is the type name of a method's receiver ("T" for T, *T and T[P]).
func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

// TestFunctionSize keeps every function of the module's non-test code within
// maxFuncLines lines.
func TestFunctionSize(t *testing.T) {
	root := moduleRoot(t)
	long, files, err := longFuncs(root, maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("only %d Go files under %s: not the module", files, root)
	}
	for _, l := range long {
		t.Errorf("%s (at most %d)", l, maxFuncLines)
	}
}
