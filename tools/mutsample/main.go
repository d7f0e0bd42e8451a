// Command mutsample runs a seeded random sample of the mutants gremlins
// lists, each applied alone, and reports which the tests kill.
//
//	make mutate-sample PKG=./gates/ MUTATE_N=40 MUTATE_SEED=2711
//
// which runs
//
//	gremlins unleash --dry-run ./gates/ | go run ./tools/mutsample -list - -pkg ./gates/ -n 40 -seed 2711
//
// The list is gremlins v0.5.0's --dry-run output (its RUNNABLE lines, paths
// relative to -pkg). Two entries that make the same change (gremlins lists a
// binary '-' both as ARITHMETIC_BASE and INVERT_NEGATIVES) count once. The
// mutants are drawn with math/rand/v2's PCG seeded with -seed, from the list
// sorted by file, line, column and type, so a seed names a sample. Each
// mutant is applied through go test's -overlay (the tree is never written)
// and the tests of its own package run, then those of each parent package up
// to -pkg (a mutant in gates/markup runs ./gates/markup/ and ./gates/).
//
// A mutant is KILLED when the tests fail, TIMED OUT when they do not finish
// within -timeout (counted as killed), LIVED when they pass, NOT COMPILING
// when the build fails. Equivalent mutants are for a reader to judge: the
// report prints each survivor's line so it can be read. -run NAME runs only
// those tests: to watch a new test kill the mutant it was written for.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/scanner"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// mutations is gremlins v0.5.0's table: what each type makes of a token.
var mutations = map[string]map[token.Token]token.Token{
	"ARITHMETIC_BASE": {token.ADD: token.SUB, token.MUL: token.QUO, token.QUO: token.MUL,
		token.REM: token.MUL, token.SUB: token.ADD},
	"CONDITIONALS_BOUNDARY": {token.GEQ: token.GTR, token.GTR: token.GEQ, token.LEQ: token.LSS,
		token.LSS: token.LEQ},
	"CONDITIONALS_NEGATION": {token.EQL: token.NEQ, token.GEQ: token.LSS, token.GTR: token.LEQ,
		token.LEQ: token.GTR, token.LSS: token.GEQ, token.NEQ: token.EQL},
	"INCREMENT_DECREMENT": {token.DEC: token.INC, token.INC: token.DEC},
	"INVERT_NEGATIVES":    {token.SUB: token.ADD},
	"INVERT_LOGICAL":      {token.LAND: token.LOR, token.LOR: token.LAND},
	"INVERT_LOOPCTRL":     {token.BREAK: token.CONTINUE, token.CONTINUE: token.BREAK},
}

type mutant struct {
	kind      string
	file      string // relative to the package directory
	line, col int
	from, to  token.Token
	src       []byte // the mutated file
}

func (m *mutant) String() string {
	return fmt.Sprintf("%s at %s:%d:%d (%s -> %s)", m.kind, m.file, m.line, m.col, m.from, m.to)
}

// runTests is the -run flag.
var runTests string

var runnable = regexp.MustCompile(`RUNNABLE\s+(\S+)\s+at\s+(\S+):(\d+):(\d+)`)

func main() {
	list := flag.String("list", "", "gremlins --dry-run output (- for stdin)")
	pkg := flag.String("pkg", "", "the package the list is of, e.g. ./gates/")
	n := flag.Int("n", 40, "mutants to draw")
	seed := flag.Uint64("seed", 1, "seed of the draw")
	timeout := flag.Duration("timeout", 4*time.Minute, "time limit of one mutant's tests")
	flag.StringVar(&runTests, "run", "", "go test -run: only these tests (to watch a new test kill its mutant)")
	flag.Parse()
	if *list == "" || *pkg == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*list, *pkg, *n, *seed, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "mutsample:", err)
		os.Exit(1)
	}
}

func run(list, pkg string, n int, seed uint64, timeout time.Duration) error {
	all, err := readList(list, pkg)
	if err != nil {
		return err
	}
	drawn := all
	if n < len(all) {
		drawn = make([]*mutant, n)
		perm := rand.New(rand.NewPCG(seed, 0)).Perm(len(all))
		for i := range drawn {
			drawn[i] = all[perm[i]]
		}
	}
	fmt.Printf("%s: %d distinct mutants listed, %d drawn with seed %d\n", pkg, len(all), len(drawn), seed)
	tmp, err := os.MkdirTemp("", "mutsample")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	count := map[string]int{}
	for i, m := range drawn {
		status, err := test(m, pkg, tmp, timeout)
		if err != nil {
			return err
		}
		count[status]++
		fmt.Printf("%2d %-12s %s\n", i+1, status, m)
		if status == "LIVED" {
			fmt.Printf("   %s\n", sourceLine(filepath.Join(pkg, m.file), m.line))
		}
	}
	compiled := len(drawn) - count["NOT COMPILING"]
	fmt.Printf("drawn %d, compiled %d: killed %d, timed out %d, lived %d\n",
		len(drawn), compiled, count["KILLED"], count["TIMED OUT"], count["LIVED"])
	return nil
}

// readList reads the RUNNABLE mutants of a gremlins list, each made once,
// sorted.
func readList(list, pkg string) ([]*mutant, error) {
	f := os.Stdin
	if list != "-" {
		var err error
		if f, err = os.Open(list); err != nil {
			return nil, err
		}
		defer f.Close()
	}
	seen := map[string]*mutant{}
	var all []*mutant
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		s := runnable.FindStringSubmatch(sc.Text())
		if s == nil {
			continue
		}
		m := &mutant{kind: s[1], file: s[2]}
		fmt.Sscan(s[3], &m.line)
		fmt.Sscan(s[4], &m.col)
		if err := m.apply(pkg); err != nil {
			return nil, err
		}
		key := fmt.Sprintf("%s:%d:%d:%s", m.file, m.line, m.col, m.to)
		if first := seen[key]; first != nil {
			first.kind = min(first.kind, m.kind) // the same label whatever the list's order
			continue
		}
		seen[key] = m
		all = append(all, m)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.file != b.file {
			return a.file < b.file
		}
		if a.line != b.line {
			return a.line < b.line
		}
		if a.col != b.col {
			return a.col < b.col
		}
		return a.kind < b.kind
	})
	return all, nil
}

// apply finds the token at the mutant's position and makes the mutated
// source.
func (m *mutant) apply(pkg string) error {
	path := filepath.Join(pkg, m.file)
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	file := fset.AddFile(path, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return fmt.Errorf("%s: no token at %d:%d", path, m.line, m.col)
		}
		p := fset.Position(pos)
		if p.Line != m.line || p.Column != m.col {
			continue
		}
		to, ok := mutations[m.kind][tok]
		if !ok {
			return fmt.Errorf("%s:%d:%d: %s does not apply to %q%s", path, m.line, m.col, m.kind, tok, lit)
		}
		off := p.Offset
		m.from, m.to = tok, to
		m.src = append(append(append([]byte{}, src[:off]...), to.String()...), src[off+len(tok.String()):]...)
		return nil
	}
}

// test runs the tests of the mutant's package and its parents up to pkg.
func test(m *mutant, pkg, tmp string, timeout time.Duration) (string, error) {
	abs, err := filepath.Abs(filepath.Join(pkg, m.file))
	if err != nil {
		return "", err
	}
	mutated := filepath.Join(tmp, "mutant.go")
	if err := os.WriteFile(mutated, m.src, 0o644); err != nil {
		return "", err
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{abs: mutated}})
	overlayFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		return "", err
	}
	var pkgs []string
	root := filepath.Clean(pkg)
	for dir := filepath.Dir(filepath.Join(root, m.file)); ; dir = filepath.Dir(dir) {
		pkgs = append(pkgs, "./"+filepath.ToSlash(dir)+"/")
		if dir == root || dir == "." || dir == "/" {
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	args := []string{"test", "-count=1", "-overlay", overlayFile, "-timeout", timeout.String()}
	if runTests != "" {
		args = append(args, "-run", runTests)
	}
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	switch {
	case err == nil:
		return "LIVED", nil
	case ctx.Err() != nil || strings.Contains(out.String(), "panic: test timed out"):
		return "TIMED OUT", nil
	case strings.Contains(out.String(), "[build failed]") || strings.Contains(out.String(), "[setup failed]"):
		return "NOT COMPILING", nil
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return "", err
	}
	return "KILLED", nil
}

func sourceLine(path string, line int) string {
	src, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(src), "\n")
	if line < 1 || line > len(lines) {
		return ""
	}
	return strings.TrimSpace(lines[line-1])
}
