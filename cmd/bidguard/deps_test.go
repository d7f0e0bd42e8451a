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

// allowed is the dependency direction, as each package's whole closure
// (go list -deps): cmd → rtb → engine → config, gates → engine, cmd →
// gates, rtb → pool; engine, rtb and gates may import the leaf jsonraw.
// config is the one home of the configuration: it reads the embedded
// default policy from the leaf configs and converts its blocks into the
// settings of audit, capture and quarantine, leaves that only config and
// cmd import (rtb reaches them through rtb.Options hooks, the quarantine
// gate through engine.SeatStates), so they are in the closure of whatever imports
// config. loadtest and faults import no bidguard package. gates/verdictcache
// and gates/markup (the creative readers) are leaves the gates may import;
// gates/markup imports jsonraw alone, whose validator and tokenizer read
// native markup without allocating (encoding/json's tokens cost 169
// allocations for a 300-byte native adm).
// internal/testbidder, internal/testserve and internal/testcerts, the
// tests' fake bidder, serve runner and certificates, import no bidguard
// package, and only tests import them.
var allowed = map[string][]string{
	"audit":      {"jsonraw"},
	"capture":    {"jsonraw"},
	"quarantine": {},
	"config":     {"audit", "capture", "quarantine", "configs", "jsonraw"},
	"engine":     {"config", "pool", "jsonraw", "configs", "audit", "capture", "quarantine"},
	"gates":      {"engine", "config", "pool", "jsonraw", "configs", "audit", "capture", "quarantine", "gates/verdictcache", "gates/markup"},
	"pool":       {},
	"jsonraw":    {},
	"rtb":        {"engine", "config", "pool", "jsonraw", "configs", "audit", "capture", "quarantine"},
	"configs":    {},
	"loadtest":   {},
	"faults":     {},
	"bench":      {"engine", "config", "gates", "gates/markup", "gates/verdictcache", "pool", "rtb", "configs", "jsonraw", "audit", "capture", "quarantine"},

	"gates/verdictcache": {},
	"gates/markup":       {"jsonraw"},

	"internal/testbidder": {},
	"internal/testserve":  {},
	"internal/testcerts":  {},
}

// testSupport are the packages of test furniture: only _test.go files
// import them, never a package's own code.
var testSupport = []string{"internal/testbidder", "internal/testserve", "internal/testcerts"}

// stdlibOnly are the leaf packages that import nothing outside the
// standard library.
var stdlibOnly = []string{"audit", "capture", "quarantine", "pool", "jsonraw", "gates/verdictcache"}

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
	// audit, capture and quarantine are in engine's closure only through config:
	// no package but config and cmd imports them itself.
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, ts := range testSupport {
			require.NotContains(t, strings.Fields(imports), module+"/"+ts, "%s is test code: only _test.go files may import it", ts)
		}
		if pkg == module+"/config" || pkg == module+"/cmd/bidguard" {
			continue
		}
		for _, leaf := range []string{"audit", "capture", "quarantine"} {
			require.NotContains(t, strings.Fields(imports), module+"/"+leaf, "%s must not import %s (config converts its settings)", pkg, leaf)
		}

	}
	out, err = exec.Command("go", "list", "-deps", module+"/engine", module+"/gates", module+"/pool").CombinedOutput()
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

// gateFileProblems reports identifiers that a file of the gates package uses
// but a gate's file (not its own) declares: gates share code only through
// the shared files, and a shared file never reaches into a gate. A gate file
// is one whose name matches a registered factory's lower-cased name; every
// other non-test file is shared. The one use allowed is the registry
// (registry.go) naming each gate's factory (<gate>Factory).
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
			if base == "registry.go" && strings.HasSuffix(id.Name, "Factory") {
				return true
			}
			if owner, ok := declaredIn[id.Name]; ok && owner != base && gateFiles[owner] {
				seen[id.Name] = true
				problems = append(problems, base+" uses "+id.Name+" declared in "+owner)
			}
			return true
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
				// A method's name is not a use of a package-level name.
				if fn.Type != nil {
					ast.Inspect(fn.Recv, visit)
					ast.Inspect(fn.Type, visit)
				}
				if fn.Body != nil {
					ast.Inspect(fn.Body, visit)
				}
				continue
			}
			ast.Inspect(d, visit)
		}
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
	write("alpha.go", "var alphaFactory = 0\nconst alphaLimit = 3\nfunc alphaHelper() int { return 1 }\n")
	write("beta.go", "func beta() int { return alphaHelper() + shared() }\n")
	write("shared.go", "func shared() int { return 2 }\nfunc sharedToo() int { return alphaLimit }\n")
	write("registry.go", "var list = []int{alphaFactory}\nvar limit = alphaLimit\n")
	write("other.go", "var f = alphaFactory\ntype t struct{}\nfunc (t) alphaHelper() int { return 0 }\n")
	problems := gateFileProblems(dir, map[string]bool{"alpha.go": true, "beta.go": true})
	slices.Sort(problems)
	require.Equal(t, []string{
		"beta.go uses alphaHelper declared in alpha.go",
		"other.go uses alphaFactory declared in alpha.go",
		"registry.go uses alphaLimit declared in alpha.go",
		"shared.go uses alphaLimit declared in alpha.go",
	}, problems)
}
