package markup

import (
	"testing"
)

// readNameLocal is what the lexer's start tags and attributes did before
// readQName: readName, then localName on the name read.
func (lx *xmlLexer) readNameLocal() (name, local string, ok bool) {
	name = lx.readName()
	local, ok = localName(name)
	return name, local, ok
}

// checkReadQName holds readQName equal to readName and localName from
// every place of s: the name, its local part, ok and where the lexer is
// left.
func checkReadQName(t *testing.T, s string) {
	t.Helper()
	for i := 0; i <= len(s); i++ {
		var a, b xmlLexer
		a.s, a.i, b.s, b.i = s, i, s, i
		n, l, ok := a.readQName()
		rn, rl, rok := b.readNameLocal()
		if n != rn || l != rl || ok != rok || a.i != b.i {
			t.Fatalf("readQName(%q at %d) = %q, %q, %v, at %d; readName and localName %q, %q, %v, at %d",
				s, i, n, l, ok, a.i, rn, rl, rok, b.i)
		}
	}
}

var qnameSeeds = []string{
	"", "a", ":", "::", "a:", ":a", "a:b", "a:b:c", "a::b", "MediaFile delivery", "vast:Ad id=", "x-y.z_1 ",
	"1a", "-a", ".a", "a1-.", "é:à", "\xff:\xfe", "a\x00b", "ab:cd=\"1\"", "a:b>", "a/>", "<a:b", "xmlns:v='x'",
}

func TestReadQNameAgainstLocalName(t *testing.T) {
	for _, s := range qnameSeeds {
		checkReadQName(t, s)
	}
	alphabet := []string{"a", ":", "1", "-", ".", "_", "é", " ", "=", ">", "\x80"}
	var build func(prefix string, depth int)
	build = func(prefix string, depth int) {
		checkReadQName(t, prefix)
		if depth == 0 {
			return
		}
		for _, c := range alphabet {
			build(prefix+c, depth-1)
		}
	}
	build("", 4)
}

func FuzzReadQName(f *testing.F) {
	for _, s := range qnameSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkReadQName(t, s) })
}
