package gates

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// bareCodes lists the integer literals a file uses as a rejection's codes:
// the loss and nbr arguments of Reject (engine.Reject in gates, Reject in the
// engine itself), and the values of a declaration whose name says it holds
// codes (…Loss, …NBR, …Codes). Each must be a named constant of
// engine/codes.go instead. Codes a user configures are read from options,
// never written as literals, so they are not seen here.
func bareCodes(fset *token.FileSet, f *ast.File) []string {
	var found []string
	var report func(e ast.Expr, what string)
	report = func(e ast.Expr, what string) {
		switch e := e.(type) {
		case *ast.BasicLit:
			if e.Kind == token.INT {
				found = append(found, fset.Position(e.Pos()).String()+": "+what+" uses bare code "+e.Value)
			}
		case *ast.CompositeLit: // the values, not the type ([2]int) nor the keys
			for _, elt := range e.Elts {
				report(elt, what)
			}
		case *ast.KeyValueExpr:
			report(e.Value, what)
		case *ast.ParenExpr:
			report(e.X, what)
		case *ast.UnaryExpr:
			report(e.X, what)
		case *ast.BinaryExpr:
			report(e.X, what)
			report(e.Y, what)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if isReject(n.Fun) && len(n.Args) == 3 {
				report(n.Args[1], "Reject")
				report(n.Args[2], "Reject")
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if !holdsCodes(name.Name) {
					continue
				}
				if len(n.Values) == len(n.Names) {
					report(n.Values[i], name.Name)
				} else {
					for _, v := range n.Values {
						report(v, name.Name)
					}
				}
			}
		}
		return true
	})
	return found
}

func isReject(fun ast.Expr) bool {
	switch f := fun.(type) {
	case *ast.Ident:
		return f.Name == "Reject"
	case *ast.SelectorExpr:
		x, ok := f.X.(*ast.Ident)
		return ok && x.Name == "engine" && f.Sel.Name == "Reject"
	}
	return false
}

func holdsCodes(name string) bool {
	return strings.HasSuffix(name, "Loss") || strings.HasSuffix(name, "NBR") || strings.HasSuffix(name, "Codes")
}

// TestNoBareCodes: no gate (and no engine-made rejection) writes a loss or
// nbr code as a number.
func TestNoBareCodes(t *testing.T) {
	var files []string
	for _, pattern := range []string{"*.go", "../engine/*.go"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		files = append(files, m...)
	}
	fset := token.NewFileSet()
	scanned := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		require.NoError(t, err)
		require.Empty(t, bareCodes(fset, f), "name the codes (engine/codes.go)")
		scanned++
	}
	require.Greater(t, scanned, 30, "the scan must see the gate files")
}

// TestBareCodesCanFail plants each kind of bare code and requires the scan
// to see it, and a named code not to be reported.
func TestBareCodesCanFail(t *testing.T) {
	f := func(src string, want int) {
		t.Helper()
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, "planted.go", "package gates\n"+src, 0)
		require.NoError(t, err)
		require.Len(t, bareCodes(fset, file), want, src)
	}
	f(`func a() { _ = engine.Reject("r", 200, 350) }`, 2)
	f(`func a() { _ = engine.Reject("r", engine.LossCreativeFilteredGeneral, 350) }`, 1)
	f(`func a() { _ = Reject("r", 3, NBRResponseRejectedGeneral) }`, 1)
	f(`const ( fooLoss = 200; fooNBR = 350 )`, 2)
	f(`var fooCodes = [...][2]int{1: {205, engine.NBRResponseRejectedGeneral}}`, 1)
	f(`func a() { _ = engine.Reject("r"+strconv.Itoa(5), engine.LossInvalidBidResponse, engine.NBRResponseRejectedGeneral) }`, 0)
	f(`const maxNodes = 10000`, 0)
}
