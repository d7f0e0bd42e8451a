package markup

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The inputs the differential tests of this package share (the fast
// readings against their references, splitTag against the tokenizer).

// testLiterals are the string literals of this package's test files.
func testLiterals(t testing.TB) []string {
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	var out []string
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					out = append(out, s)
				}
			}
			return true
		})
	}
	return out
}

// goldenFile is one of the gates' golden files: its path, its bytes, and
// what it decodes to.
type goldenFile struct {
	path string
	data []byte
	v    any
}

// goldenFiles are the gates' golden files (../testdata/*/*.json), decoded.
func goldenFiles(t testing.TB) []goldenFile {
	names, err := filepath.Glob(filepath.Join("..", "testdata", "*", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, names)
	out := make([]goldenFile, 0, len(names))
	for _, name := range names {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		var v any
		require.NoError(t, json.Unmarshal(data, &v), name)
		out = append(out, goldenFile{path: name, data: data, v: v})
	}
	return out
}

// eachString calls f with every string in v, keys left out; a string that
// is itself JSON (a native adm, say) is walked too when deep.
func eachString(v any, deep bool, f func(key, s string)) {
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch v := v.(type) {
		case string:
			f(key, v)
			var inner any
			if deep && json.Unmarshal([]byte(v), &inner) == nil {
				walk("", inner)
			}
		case []any:
			for _, x := range v {
				walk(key, x)
			}
		case map[string]any:
			for k, x := range v {
				walk(k, x)
			}
		}
	}
	walk("", v)
}

// fuzzCorpus are the string and []byte values of this package's fuzz
// corpora (testdata/fuzz).
func fuzzCorpus(t testing.TB) []string {
	paths, err := filepath.Glob(filepath.Join("testdata", "fuzz", "*", "*"))
	require.NoError(t, err)
	var out []string
	for _, path := range paths {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, line := range strings.Split(string(data), "\n")[1:] {
			line = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(line, "[]byte("), "string("), ")")
			if s, err := strconv.Unquote(line); err == nil {
				out = append(out, s)
			}
		}
	}
	return out
}
