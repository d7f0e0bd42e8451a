package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/bidguard/bidguard"

// allowed is DESIGN.md's dependency direction: cmd → rtb → engine → pool,
// gates → engine, cmd → gates; engine, rtb and gates may import the leaf
// jsonraw, and read the embedded default policy from the leaf configs.
// loadtest and faults import no bidguard package; audit and quarantine are
// leaves only cmd imports (rtb reaches them through rtb.Options hooks, the
// quarantine gate through engine.SeatStates). gates/markup, the creative
// readers, imports no bidguard package; only gates (and what imports
// gates) reaches it.
var allowed = map[string][]string{
	"audit":        {"jsonraw"},
	"quarantine":   {},
	"engine":       {"pool", "jsonraw", "configs"},
	"gates":        {"engine", "pool", "jsonraw", "configs", "gates/markup"},
	"gates/markup": {},
	"pool":         {},
	"jsonraw":      {},
	"rtb":          {"engine", "pool", "jsonraw", "configs"},
	"configs":      {},
	"loadtest":     {},
	"faults":       {},
	"bench":        {"engine", "gates", "gates/markup", "pool", "rtb", "configs", "jsonraw"},
}

// stdlibOnly are the leaf packages that import nothing outside the
// standard library.
var stdlibOnly = []string{"audit", "quarantine", "pool", "jsonraw"}

func TestDependencyDirection(t *testing.T) {
	for pkg, ok := range allowed {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"/"+pkg).CombinedOutput()
		require.NoError(t, err, string(out))
		for _, dep := range strings.Fields(string(out)) {
			if !strings.HasPrefix(dep, module+"/") || dep == module+"/"+pkg {
				continue
			}
			name := strings.TrimPrefix(dep, module+"/")
			require.Contains(t, ok, name, "%s must not import %s", pkg, name)
		}
	}
	out, err := exec.Command("go", "list", "-deps", module+"/engine", module+"/gates", module+"/pool").CombinedOutput()
	require.NoError(t, err)
	require.NotContains(t, string(out), "fasthttp", "only rtb (and bench) may import fasthttp")
	for _, pkg := range stdlibOnly {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module+"/"+pkg).CombinedOutput()
		require.NoError(t, err, string(out))
		for _, dep := range strings.Fields(string(out)) {
			// Beside the standard library, only bidguard's own stdlib-only
			// leaves (checked by this same loop).
			name := strings.TrimPrefix(dep, module+"/")
			require.True(t, dep == module+"/"+pkg || slices.Contains(stdlibOnly, name), "%s imports only the standard library, not %s", pkg, dep)
		}
	}
}

// gateFileProblems reports identifiers that a gate file uses but another
// gate's file declares: gates share code only through the shared files.
// A gate file is one whose name matches a registered factory's lower-cased
// name; every other non-test file is shared.
func gateFileProblems(dir string, gateFiles map[string]bool) []string {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, nil, 0) //nolint:staticcheck // Obj resolution is what this check needs
	if err != nil {
		return []string{err.Error()}
	}
	declaredIn := map[string]string{}
	files := map[string]*ast.File{}
	for _, p := range pkgs {
		for path, f := range p.Files {
			base := filepath.Base(path)
			if strings.HasSuffix(base, "_test.go") {
				continue
			}
			files[base] = f
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil {
						declaredIn[d.Name.Name] = base
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							declaredIn[s.Name.Name] = base
						case *ast.ValueSpec:
							for _, n := range s.Names {
								declaredIn[n.Name] = base
							}
						}
					}
				}
			}
		}
	}
	var problems []string
	for base, f := range files {
		if !gateFiles[base] {
			continue
		}
		seen := map[string]bool{}
		var visit func(n ast.Node) bool
		visit = func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				ast.Inspect(sel.X, visit) // a field or method name is not a package-level use
				return false
			}
			id, ok := n.(*ast.Ident)
			// Obj != nil: resolved inside this file (a local or a file-level name).
			if !ok || id.Obj != nil || seen[id.Name] || id.Name == "_" {
				return true
			}
			if owner, ok := declaredIn[id.Name]; ok && owner != base && gateFiles[owner] {
				seen[id.Name] = true
				problems = append(problems, base+" uses "+id.Name+" declared in "+owner)
			}
			return true
		}
		ast.Inspect(f, visit)
	}
	return problems
}

func gateFileSet(t *testing.T) map[string]bool {
	out, err := exec.Command("go", "run", "./testdata/listgates").CombinedOutput()
	require.NoError(t, err, string(out))
	set := map[string]bool{}
	for _, n := range strings.Fields(string(out)) {
		set[strings.ToLower(n)+".go"] = true
	}
	require.NotEmpty(t, set)
	return set
}

func TestGateFilesShareOnlySharedFiles(t *testing.T) {
	require.Empty(t, gateFileProblems("../../gates", gateFileSet(t)))
}

func TestGateFileCheckCanFail(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		require.NoError(t, writeFile(filepath.Join(dir, name), "package gates\n"+src))
	}
	write("alpha.go", "func alphaHelper() int { return 1 }\n")
	write("beta.go", "func beta() int { return alphaHelper() + shared() }\n")
	write("shared.go", "func shared() int { return 2 }\n")
	require.Equal(t, []string{"beta.go uses alphaHelper declared in alpha.go"},
		gateFileProblems(dir, map[string]bool{"alpha.go": true, "beta.go": true}))
}
