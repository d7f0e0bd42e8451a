package config

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// sameAsYAMLv3 returns "" when readFast declines data, or reads it into
// the tree yaml.v3 parses it into (comments aside); else what differs.
func sameAsYAMLv3(data []byte) string {
	fast, ok := readFast(data)
	if !ok {
		return ""
	}
	var ref yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&ref); err != nil {
		return fmt.Sprintf("readFast reads what yaml.v3 rejects: %v", err)
	}
	return diffNodes("", fast, &ref)
}

// diffNodes describes the first difference between the trees a (readFast's)
// and b (yaml.v3's), comment fields aside.
func diffNodes(path string, a, b *yaml.Node) string {
	type pos struct {
		Kind              yaml.Kind
		Style             yaml.Style
		Tag, Value, Anchr string
		Alias             *yaml.Node
		Line, Column, N   int
	}
	pa := pos{a.Kind, a.Style, a.Tag, a.Value, a.Anchor, a.Alias, a.Line, a.Column, len(a.Content)}
	pb := pos{b.Kind, b.Style, b.Tag, b.Value, b.Anchor, b.Alias, b.Line, b.Column, len(b.Content)}
	if pa != pb {
		return fmt.Sprintf("%s: fast %+v, yaml.v3 %+v", path, pa, pb)
	}
	for i := range a.Content {
		if d := diffNodes(fmt.Sprintf("%s/%d", path, i), a.Content[i], b.Content[i]); d != "" {
			return d
		}
	}
	return ""
}

// yamlTexts returns every YAML file of the repository and every string
// literal of its Go files (most are not YAML: readFast must decline or
// agree on those too), with generated variants of the YAML ones.
var yamlTexts = sync.OnceValue(func() [][]byte {
	var out [][]byte
	seen := map[string]bool{}
	add := func(b []byte) {
		if !seen[string(b)] {
			seen[string(b)] = true
			out = append(out, b)
		}
	}
	_ = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || (d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != "..") {
			return fs.SkipDir
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml":
			if b, err := os.ReadFile(path); err == nil {
				add(b)
			}
		case ".go":
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				return nil
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
					if s, err := strconv.Unquote(l.Value); err == nil && len(s) < 1<<16 {
						add([]byte(s))
					}
				}
				return true
			})
		}
		return nil
	})
	base := len(out)
	rnd := rand.New(rand.NewPCG(26, 1))
	for _, b := range out[:base] {
		var n yaml.Node
		if yaml.Unmarshal(b, &n) != nil || n.Kind != yaml.DocumentNode {
			continue
		}
		add(bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")))
		add(bytes.ReplaceAll(b, []byte("\n"), []byte("  # note\n")))
		add(bytes.ReplaceAll(b, []byte("\n  "), []byte("\n    ")))
		add(bytes.ReplaceAll(b, []byte(": "), []byte(":   ")))
		add(bytes.ReplaceAll(b, []byte("\n"), []byte("\n\n# note\n")))
		for range 4 {
			restyle(&n, rnd)
			if t, err := yaml.Marshal(&n); err == nil {
				add(t)
			}
		}
	}
	return out
})

// restyle writes n's collections in flow or block style and its strings
// plain or quoted, at random.
func restyle(n *yaml.Node, rnd *rand.Rand) {
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		n.Style &^= yaml.FlowStyle
		if rnd.IntN(3) == 0 {
			n.Style |= yaml.FlowStyle
		}
	case yaml.ScalarNode:
		if n.Tag == "!!str" {
			n.Style = []yaml.Style{0, 0, yaml.SingleQuotedStyle, yaml.DoubleQuotedStyle}[rnd.IntN(4)]
		}
	}
	for _, c := range n.Content {
		restyle(c, rnd)
	}
}

func TestReadFastAgreesWithYAMLv3(t *testing.T) {
	read := 0
	for _, b := range yamlTexts() {
		require.Empty(t, sameAsYAMLv3(b), "%q", b)
		if _, ok := readFast(b); ok {
			read++
		}
	}
	t.Logf("%d of %d texts read fast", read, len(yamlTexts()))
	require.Greater(t, read, 200)
}

// TestReadFastSubset pins what readFast reads and declines; every case is
// also compared with yaml.v3.
func TestReadFastSubset(t *testing.T) {
	f := func(text string, want bool) {
		t.Helper()
		_, ok := readFast([]byte(text))
		require.Equal(t, want, ok, "%q", text)
		require.Empty(t, sameAsYAMLv3([]byte(text)), "%q", text)
	}
	// Read.
	f("a: 1\nb: -2\nc: true\nd: ~\ne:\nf: null\n", true)
	f("a: -0\nb: -9\nc: [-0, -1]\n", true)
	f("a: http://x:8080/p#frag # comment\n", true)
	f("a:\n- x\n- y\nb: 1\n", true)
	f("- a: 1\n  b: [x, 'y', \"z\\n\"]\n-\n  c: {d: 1,\n    e: 2}\n", true)
	f("\r\n  'k''s': \"v\\\"\"\r\n  k2: ./path\r\n", true)
	f("{a: [1, 2], b: {}}\n", true)
	f("seats:\n\n\n\nother: 1\n", true)
	f("a: 30s\nb: 1m30s\nc: yes\nd: é\n", true)
	f("{é: [é, 1], b: 'é', c: é}\n- x\n", false)
	f("{é: [é, 1], b: 'é', c: é}\n", true)
	f("\u00a0: x \u00a0 # c\nb: \ue000\u00a0\n", true)
	f("a: 😀\n", false)
	f("a: x\u0085y\n", false)
	// Declined.
	f("", false)
	f("# only a comment\n", false)
	f("---\na: 1\n", false)
	f("a: &x 1\nb: *x\n", false)
	f("a: !!str 1\n", false)
	f("a: |\n  text\n", false)
	f("a: 1.5\nb: 0x10\nc: 2001-12-14\n", false)
	f("<<: {a: 1}\n", false)
	f("a:\tb\n", false)
	f("a: b\n  c\n", false)
	f("a: [b\n  c]\n", false)
	f("? a\n: b\n", false)
	f("a: 'b\n  c'\n", false)
	f("a: \"\\u00e9\"\n", false)
	f("a: \"\\/\"\n", false)
	f("a: \"\\' \\ \\\\\"\n", true)
	f("a: {b: 0?}\n", false)
	f(strings.Repeat("[", maxDepth)+strings.Repeat("]", maxDepth), true)
	f(strings.Repeat("[", maxDepth+1)+strings.Repeat("]", maxDepth+1), false)
	f("a: "+strings.Repeat("[", 10001)+strings.Repeat("]", 10001), false)
	f("a: 1\n b: 2\n", false)
	f("a: {b:1}\n", false)
	f("a: [x,#c\n y]\n", false)
	f("\ufeffa: 1\n", false)
	f("a: 1\rb: 2\n", false)
	f("a: \u2028\n", false)
}

func FuzzYAMLFast(f *testing.F) {
	// About 2,000 seeds: more make the baseline outlast a short run.
	var read, declined [][]byte
	for _, b := range yamlTexts() {
		if len(b) >= 4096 {
			continue
		}
		var n yaml.Node
		if _, ok := readFast(b); ok {
			read = append(read, b)
		} else if yaml.Unmarshal(b, &n) == nil && len(n.Content) == 1 && n.Content[0].Kind != yaml.ScalarNode {
			declined = append(declined, b)
		}
	}
	for i, b := range read {
		if i%max(1, len(read)/1500) == 0 {
			f.Add(b)
		}
	}
	for i, b := range declined {
		if i%max(1, len(declined)/500) == 0 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if d := sameAsYAMLv3(data); d != "" {
			t.Fatalf("%q: %s", data, d)
		}
	})
}

// sameValue describes the first difference between a and b, the comment
// fields of YAML nodes and the origins of seats aside ("" when none).
func sameValue(path string, a, b reflect.Value) string {
	if a.IsValid() != b.IsValid() {
		return path + ": one is missing"
	}
	if !a.IsValid() {
		return ""
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				return path + ": one is nil"
			}
			return ""
		}
		return sameValue(path, a.Elem(), b.Elem())
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			switch name := a.Type().Field(i).Name; name {
			case "HeadComment", "LineComment", "FootComment", "origin":
			default:
				if d := sameValue(path+"."+name, a.Field(i), b.Field(i)); d != "" {
					return d
				}
			}
		}
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() || (a.Kind() == reflect.Slice && a.IsNil() != b.IsNil()) {
			return fmt.Sprintf("%s: lengths %d and %d", path, a.Len(), b.Len())
		}
		for i := 0; i < a.Len(); i++ {
			if d := sameValue(fmt.Sprintf("%s[%d]", path, i), a.Index(i), b.Index(i)); d != "" {
				return d
			}
		}
	case reflect.Map:
		if a.Len() != b.Len() || a.IsNil() != b.IsNil() {
			return fmt.Sprintf("%s: sizes %d and %d", path, a.Len(), b.Len())
		}
		for _, k := range a.MapKeys() {
			if d := sameValue(fmt.Sprintf("%s[%v]", path, k), a.MapIndex(k), b.MapIndex(k)); d != "" {
				return d
			}
		}
	case reflect.String:
		if a.String() != b.String() {
			return fmt.Sprintf("%s: %q and %q", path, a.String(), b.String())
		}
	case reflect.Bool:
		if a.Bool() != b.Bool() {
			return path + ": bools differ"
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if a.Int() != b.Int() {
			return fmt.Sprintf("%s: %d and %d", path, a.Int(), b.Int())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if a.Uint() != b.Uint() {
			return fmt.Sprintf("%s: %d and %d", path, a.Uint(), b.Uint())
		}
	case reflect.Float32, reflect.Float64:
		if a.Float() != b.Float() {
			return fmt.Sprintf("%s: %v and %v", path, a.Float(), b.Float())
		}
	default:
		return path + ": cannot compare a " + a.Kind().String()
	}
	return ""
}

// withFast runs f with readFast on or off and the seat memos empty.
func withFast(on bool, f func()) {
	defer func(was bool) { useFast = was }(useFast)
	useFast = on
	entryMemo.name, entryMemo.entries = "", nil
	seatMemo.dir, seatMemo.files = "", nil
	f()
}

// TestDecodeFastAgrees decodes every YAML text of TestReadFastAgreesWithYAMLv3
// as a config file (whole, in parts and by seat entry) and as a seat file
// with readFast and without: the configs, seats and errors must be the
// same.
func TestDecodeFastAgrees(t *testing.T) {
	oldMin, oldCount := partMin, partCount
	defer func() { partMin, partCount = oldMin, oldCount }()
	partMin, partCount = 1, func() int { return 2 }
	errText := func(err error) string { // in order but for validation's own, which walks maps
		if err == nil {
			return ""
		}
		lines := strings.Split(err.Error(), "\n")
		slices.Sort(lines)
		return strings.Join(lines, "\n")
	}
	decoded, entries := 0, 0
	// Texts with a key of a config, or of a seat file.
	has := func(root *yaml.Node, t reflect.Type) bool {
		fields := yamlFields(t)
		for i := 0; i < len(root.Content); i += 2 {
			if _, ok := fields[root.Content[i].Value]; ok {
				return true
			}
		}
		return false
	}
	for _, b := range yamlTexts() {
		doc, ok := readFast(b)
		if !ok || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		for _, bySeat := range []bool{false, true} {
			if !has(doc.Content[0], reflect.TypeOf(Config{})) {
				break
			}
			var slow, fast *Config
			var slowErr, fastErr error
			withFast(false, func() { slow, slowErr = parse("cfg.yaml", b, bySeat) })
			withFast(true, func() { fast, fastErr = parse("cfg.yaml", b, bySeat) })
			require.Equal(t, errText(slowErr), errText(fastErr), "%q", b)
			require.Empty(t, sameValue("Config", reflect.ValueOf(slow), reflect.ValueOf(fast)), "%q", b)
			if slowErr == nil {
				decoded++
			}
		}
		if blk, ok := splitSeats(b); ok {
			for i := range blk.entries {
				text, line := blk.entry(i)
				var slow, fast *seatEntry
				var slowOK, fastOK bool
				withFast(false, func() { slow, slowOK = decodeEntry("cfg.yaml", text, line) })
				withFast(true, func() { fast, fastOK = decodeEntry("cfg.yaml", text, line) })
				require.Equal(t, slowOK, fastOK, "%q", text)
				require.Empty(t, sameValue("entry", reflect.ValueOf(slow), reflect.ValueOf(fast)), "%q", text)
				if slowOK {
					entries++
				}
			}
		}
		if !has(doc.Content[0], reflect.TypeOf(SeatConfig{})) {
			continue
		}
		var slow, fast SeatConfig
		var slowErr, fastErr error
		withFast(false, func() { slowErr = decodeStrict("seat.yaml", b, &slow) })
		withFast(true, func() { fastErr = decodeStrict("seat.yaml", b, &fast) })
		require.Equal(t, errText(slowErr), errText(fastErr), "%q", b)
		require.Empty(t, sameValue("SeatConfig", reflect.ValueOf(slow), reflect.ValueOf(fast)), "%q", b)
	}
	t.Logf("%d configs decoded without an error, %d seat entries", decoded, entries)
	require.Greater(t, decoded, 20)
	require.Greater(t, entries, 10)
}

// seatFileText is a seat file as a large seatsDir holds them.
const seatFileText = `# one option of one inherited gate changed
seat: seat-00001
gateOptions:
  rtb.bid-sanity: {options: {maxPrice: 1000}}
`

// manySeats returns a config file of n seats, each overriding one option.
func manySeats(n int) []byte {
	var b strings.Builder
	b.WriteString("seats:\n")
	for i := range n {
		fmt.Fprintf(&b, "  \"seat-%05d\":\n    seat: seat-%05d\n    gateOptions:\n", i, i)
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, "      rtb.bid-sanity: {options: {maxPrice: %d}}\n", 1000+i)
		case 1:
			fmt.Fprintf(&b, "      rtb.markup-safety: {options: {maxAdmBytes: %d}}\n", 1048575-i)
		default:
			fmt.Fprintf(&b, "      rtb.url-safety: {options: {extraInternalNames: [seat-%d.loadtest.internal]}}\n", i)
		}
	}
	return []byte(b.String())
}

// BenchmarkReadYAML reads a seat file and a config of 10,000 seats into
// a tree: readFast, and yaml.v3's parser.
func BenchmarkReadYAML(b *testing.B) {
	for _, in := range []struct {
		name string
		text []byte
	}{{"seatFile", []byte(seatFileText)}, {"config10k", manySeats(10000)}} {
		b.Run(in.name+"/readFast", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := readFast(in.text); !ok {
					b.Fatal("declined")
				}
			}
		})
		b.Run(in.name+"/yaml.v3", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var n yaml.Node
				if err := yaml.NewDecoder(bytes.NewReader(in.text)).Decode(&n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeSeatFile decodes a seat file strictly, from readFast's
// tree and by yaml.v3 alone.
func BenchmarkDecodeSeatFile(b *testing.B) {
	for _, fast := range []bool{true, false} {
		b.Run(map[bool]string{true: "readFast", false: "yaml.v3"}[fast], func(b *testing.B) {
			defer func(was bool) { useFast = was }(useFast)
			useFast = fast
			b.ReportAllocs()
			for b.Loop() {
				var s SeatConfig
				if err := decodeStrict("seat.yaml", []byte(seatFileText), &s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAdoptTreeIsStrict: a tree readFast reads is decoded with yaml.v3's
// KnownFields, so an unknown key fails the fast path itself (the error
// then comes from yaml.v3 reading the text).
func TestAdoptTreeIsStrict(t *testing.T) {
	f := func(text string, want string) {
		t.Helper()
		doc, ok := readFast([]byte(text))
		require.True(t, ok, "%q", text)
		var c Config
		w := checked{name: "c.yaml", out: &c, typed: map[int]bool{}, fast: doc.Content[0]}
		err := adoptTree(&w)
		if want == "" {
			require.NoError(t, err)
			require.Empty(t, w.errs)
			return
		}
		require.ErrorContains(t, err, want)
		require.ErrorContains(t, decodeStrict("c.yaml", []byte(text), &Config{}), "c.yaml:")
	}
	f("policy: {action: shadow}\n", "")
	f("policy: {bogus: 1}\n", "field bogus not found")
	f("limits:\n  maxBids: 10\n  nope: 1\n", "field nope not found")
	f("seats:\n  a:\n    seat: a\n    extra: 1\n", "field extra not found")
}
