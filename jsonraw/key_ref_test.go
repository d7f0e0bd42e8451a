package jsonraw

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// refKeys is Keys' exact table as it was before MatchExact took a short
// name in its first slot inline (the length hashed, the table sized twice
// the names, 64 multipliers tried): the reference MatchExact is held to
// (TestMatchExactAgreesWithBefore, FuzzMatchExactAgreesWithBefore). Keys
// that are no name as written go to the same fold.
type refKeys struct {
	k     *Keys // names, byLen and fold
	exact []exactSlot
	mask  uint64
	mul   uint64
	shift uint8
}

func newRefKeys(names ...string) *refKeys {
	r := &refKeys{k: NewKeys(names...)}
	size, bits := 8, 3
	for size < 2*len(names) {
		size, bits = size*2, bits+1
	}
	r.mask, r.shift = uint64(size-1), uint8(64-bits)
	best, bestMul := -1, uint64(0)
	mul := uint64(0x9e3779b97f4a7c15)
	for range 64 {
		table, misses := r.fill(size, mul|1)
		if best < 0 || misses < best {
			best, bestMul, r.exact = misses, mul|1, table
		}
		if misses == 0 {
			break
		}
		mul = mul*0xbf58476d1ce4e5b9 + 0x94d049bb133111eb
	}
	r.mul = bestMul
	return r
}

func (r *refKeys) slot(first, last uint64, n int) uint64 {
	return ((first ^ last*0x9e3779b97f4a7c15 ^ uint64(n)) * r.mul >> (r.shift & 63)) & r.mask
}

func (r *refKeys) fill(size int, mul uint64) (table []exactSlot, misses int) {
	table = make([]exactSlot, size)
	r.mul = mul
	for i, name := range r.k.names {
		first, last := keyWords(name)
		h := r.slot(first, last, len(name))
		if table[h].idx != 0 {
			misses++
		}
		for table[h].idx != 0 {
			h = (h + 1) & r.mask
		}
		table[h] = exactSlot{first: first, last: last, n: int32(len(name)), idx: int32(i + 1)}
	}
	return table, misses
}

func (r *refKeys) MatchExact(raw []byte) (i int, exact bool) {
	n := len(raw)
	var first, last uint64
	if uint(n-1) < 8 && cap(raw) >= 8 {
		first = binary.LittleEndian.Uint64(raw[:8]) & (^uint64(0) >> ((64 - 8*n) & 63))
	} else {
		first, last = keyWords(raw)
	}
	for h := r.slot(first, last, n); ; h = (h + 1) & r.mask {
		e := &r.exact[h]
		if e.idx == 0 {
			break
		}
		if e.first == first && e.last == last && int(e.n) == n &&
			(n <= 16 || r.k.names[e.idx-1][8:n-8] == string(raw[8:n-8])) {
			return int(e.idx - 1), true
		}
	}
	return r.k.fold(raw), false
}

// checkMatchExact compares MatchExact with the reference on raw, alone and
// cut from a document (bytes after it within its capacity), and on every
// prefix of raw cut from raw itself.
func checkMatchExact(t *testing.T, k *Keys, ref *refKeys, raw []byte) {
	t.Helper()
	for _, r := range [][]byte{raw, inDocument(raw), append(raw[:len(raw):len(raw)], "\x00\x00\x00\x00\x00\x00\x00\x00"...)[:len(raw)]} {
		i, exact := k.MatchExact(r)
		wi, wexact := ref.MatchExact(r)
		require.Equal(t, wi, i, "%q", r)
		require.Equal(t, wexact, exact, "%q", r)
	}
	for n := range len(raw) {
		i, exact := k.MatchExact(raw[:n])
		wi, wexact := ref.MatchExact(raw[:n])
		require.Equal(t, wi, i, "%q of %q", raw[:n], raw)
		require.Equal(t, wexact, exact, "%q of %q", raw[:n], raw)
	}
}

// keyVariants are the keys checkMatchExact tries for a name: the name, its
// case variants, escapes, a byte more or less, a zero byte in it.
func keyVariants(name string) []string {
	v := []string{name, strings.ToUpper(name), name + "x", name + "\x00", "\x00" + name}
	if name != "" {
		v = append(v, name[1:], name[:len(name)-1], strings.ToUpper(name[:1])+name[1:],
			fmt.Sprintf(`\u%04x`, name[0])+name[1:],
			name[:len(name)-1]+"\x00", name[:len(name)/2]+"\x00"+name[len(name)/2+1:])
	}
	return v
}

// TestMatchExactAgreesWithBefore: MatchExact gives what it gave before on
// the names of several lists and on keys near them.
func TestMatchExactAgreesWithBefore(t *testing.T) {
	lists := [][]string{
		testNames,
		{"a"},
		{"id", "impid", "price", "adid", "nurl", "burl", "lurl", "adm", "adomain", "bundle", "iurl", "cid",
			"crid", "tactic", "cattax", "cat", "attr", "apis", "api", "protocol", "qagmediarating", "language",
			"langb", "dealid", "w", "h", "wratio", "hratio", "exp", "dur", "mtype", "slotinpod", "ext"},
		{"seatbid", "id", "bidid", "cur", "customdata", "nbr", "ext", "imp", "Seatbid", "SEATBID"},
		{"abcdefgh", "abcdefghi", "abcdefg", "bcdefgh", "abcdefgh_x_ijklmnop", "abcdefgh_x_ijklmnoq"},
	}
	var names []string
	for i := range 200 {
		names = append(names, "f"+strings.Repeat("x", i%23)+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	lists = append(lists, names)
	for _, names := range lists {
		k, ref := NewKeys(names...), newRefKeys(names...)
		for _, n := range names {
			for _, v := range keyVariants(n) {
				checkMatchExact(t, k, ref, []byte(v))
			}
		}
		for _, v := range []string{"", "q", "zzzzzzzzz", `\u0069d`, "ſk", "\xff", "\u212a"} {
			checkMatchExact(t, k, ref, []byte(v))
		}
	}
}

// FuzzMatchExactAgreesWithBefore: on names and a key of the fuzzer's,
// MatchExact gives what it gave before.
func FuzzMatchExactAgreesWithBefore(f *testing.F) {
	f.Add("id,impid,price,adm,ext,seatbid,bid", []byte("price"))
	f.Add("abcdefgh,abcdefghi,a", []byte("abcdefgh"))
	f.Add("id,ID,sk,s,k", []byte("ſK"))
	f.Add("x", []byte("x\x00"))
	f.Fuzz(func(t *testing.T, list string, raw []byte) {
		seen := map[string]bool{}
		var names []string
		for _, n := range strings.Split(list, ",") {
			ascii := true
			for i := range len(n) {
				ascii = ascii && n[i] < 0x80
			}
			if ascii && !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
		k, ref := NewKeys(names...), newRefKeys(names...)
		checkMatchExact(t, k, ref, raw)
		for _, n := range names {
			checkMatchExact(t, k, ref, []byte(n))
		}
	})
}
