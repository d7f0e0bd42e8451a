package gates

import (
	"encoding/binary"
	"errors"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Domain names as adomainVerify, badvCompliance, deal (wadomain) and
// seatPolicy compare them.
//
// A domain is normalised by trimming white space, lower-casing, and
// converting Unicode labels to punycode with the IDNA (UTS #46) lookup
// mapping, so that "Bücher.de", "BÜCHER.DE" and "xn--bcher-kva.de" are one
// name and full-width or soft-hyphenated spellings of a placeholder are still
// caught. ASCII input is only lower-cased, except that an "xn--" label is
// decoded and validated. Normalisation allocates nothing for input that is
// already normalised ASCII without an "xn--" label (the pass path); anything
// else may allocate.
//
// Matching is "equal to, or a subdomain of": a name covers itself and every
// name ending in "." + itself ("blocked.com" covers "ads.blocked.com", not
// "notblocked.com"). One trailing dot, on either side, is ignored when
// matching (the hostname rule still rejects it in adomainVerify).

// domainProfile is the IDNA lookup profile with the hyphen-position check
// off: the hostname rule decides about hyphens, and real hosts such as
// "r3--sn-abc.example-cdn.net" carry "--" in positions 3-4.
var domainProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.CheckHyphens(false),
)

// Limits of the hostname rule.
const (
	maxHostnameLen = 253
	maxLabelLen    = 63
)

// normalizeDomain trims, lower-cases and converts s to punycode. ok is false
// when IDNA rejected the name (a disallowed character, invalid UTF-8, an
// "xn--" label that is not valid punycode); d is then a best-effort form,
// still fit for a placeholder check, a block-list match and a reason: for
// ASCII input, the input lower-cased (an invalid "xn--" label is kept as
// written, never decoded into another name). d may be empty.
func normalizeDomain(s string) (d string, ok bool) { return normalizeTrimmed(trimSpace(s)) }

// normalizeTrimmed is normalizeDomain on s that trimSpace already trimmed
// (the per-bid gates trim an entry first to skip a blank one).
func normalizeTrimmed(s string) (d string, ok bool) {
	// One pass: whether every byte is ASCII, none upper-case, and whether
	// one is an 'x' (without one, no label starts with "xn--").
	f := nameBits(s)
	if f&nameHigh == 0 {
		if f&nameUpper != 0 {
			s = strings.ToLower(s)
			f |= nameX // the 'x' may have been an 'X': hasPunycodeLabel decides
		}
		if f&nameX == 0 || !hasPunycodeLabel(s) {
			return s, true
		}
		// Each "xn--" label must decode to a valid Unicode label whose
		// encoding is that label again: IDNA lookup leaves a valid name
		// unchanged, and rewrites an invalid one ("xn--" alone vanishes,
		// "xn--aa-" decodes to "aa") or rejects it.
		a, err := domainProfile.ToASCII(s)
		return s, err == nil && a == s
	}
	if !utf8.ValidString(s) {
		// IDNA would read the bad bytes as U+FFFD and encode them.
		return s, false
	}
	d, err := domainProfile.ToASCII(s)
	return d, err == nil
}

// nameClass classifies the bytes of a name for normalizeTrimmed.
var nameClass = func() (t [256]uint8) {
	for c := range 256 {
		b := byte(c)
		switch {
		case b >= 0x80:
			t[c] = nameHigh
		case 'A' <= b && b <= 'Z':
			t[c] = nameUpper
		}
		if b == 'x' {
			t[c] |= nameX
		}
	}
	return t
}()

// The bits of nameClass.
const (
	nameHigh  = 1 << iota // not ASCII
	nameUpper             // an ASCII upper-case letter
	nameX                 // 'x'
)

// nameBits ors the nameClass bits of s's bytes, four a step (a byte at a
// time costs about twice as many instructions a byte).
func nameBits(s string) uint8 {
	var f uint8
	i := 0
	for ; i+4 <= len(s); i += 4 {
		w := s[i : i+4]
		f |= nameClass[w[0]] | nameClass[w[1]] | nameClass[w[2]] | nameClass[w[3]]
	}
	for ; i < len(s); i++ {
		f |= nameClass[s[i]]
	}
	return f
}

// trimSpace is strings.TrimSpace, which it calls only when s begins or
// ends with a byte that is not a printable ASCII character: a name as sent
// is returned at once.
func trimSpace(s string) string {
	// A byte minus 0x21 is at most 0x7e-0x21 for '!' to '~', DEL's 0x5e
	// included (not space either), and wraps above for the rest.
	if len(s) == 0 || s[0]-0x21 > 0x5e || s[len(s)-1]-0x21 > 0x5e {
		return strings.TrimSpace(s)
	}
	return s
}

// hasPunycodeLabel reports whether a lower-case name has a label starting
// with "xn--".
func hasPunycodeLabel(s string) bool {
	return strings.HasPrefix(s, "xn--") || strings.Contains(s, ".xn--")
}

// isHostname applies the hostname rule to a normalised name: two or more
// dot-separated labels of [a-z0-9-], 1-63 characters each, not starting or
// ending with '-', the last label letters only or an "xn--" label, 253
// characters at most, no trailing dot. A scheme, port, path, '@' or space
// fails the character rule.
func isHostname(d string) bool {
	if len(d) == 0 || len(d) > maxHostnameLen {
		return false
	}
	// One pass: each byte a letter, digit or '-', each label (between
	// dots) 1-63 of them without '-' at either end.
	labels, start := 0, 0
	for i := 0; i < len(d); i++ {
		c := d[i]
		if c == '.' {
			if !labelEdges(d, start, i) {
				return false
			}
			labels++
			start = i + 1
			continue
		}
		if !ldh[c] {
			return false
		}
	}
	if !labelEdges(d, start, len(d)) {
		return false
	}
	last := d[start:]
	return labels >= 1 && (isLetters(last) || strings.HasPrefix(last, "xn--"))
}

// labelEdges reports whether the label d[start:end], whose bytes are known
// to be letters, digits and '-', is 1-63 bytes long without '-' at either end.
func labelEdges(d string, start, end int) bool {
	n := end - start
	return n > 0 && n <= maxLabelLen && d[start] != '-' && d[end-1] != '-'
}

// ldh marks [a-z0-9-].
var ldh = func() (t [256]bool) {
	for c := range 256 {
		t[c] = isLDH(byte(c))
	}
	return t
}()

// isLabel reports whether l is 1-63 characters of [a-z0-9-] that neither
// start nor end with '-'.
func isLabel(l string) bool {
	if len(l) == 0 || len(l) > maxLabelLen || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		if !isLDH(l[i]) {
			return false
		}
	}
	return true
}

func isLDH(c byte) bool {
	return ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') || c == '-'
}

func isLetters(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return len(s) > 0
}

// trimDot removes one trailing dot.
func trimDot(s string) string {
	if len(s) > 0 && s[len(s)-1] == '.' {
		return s[:len(s)-1]
	}
	return s
}

// underDomain reports whether the normalised name d equals parent or is a
// subdomain of it. An empty parent covers nothing.
func underDomain(d, parent string) bool {
	d, parent = trimDot(d), trimDot(parent)
	if parent == "" || len(d) < len(parent) {
		return false
	}
	if len(d) == len(parent) {
		return d == parent
	}
	cut := len(d) - len(parent)
	return d[cut-1] == '.' && d[cut:] == parent
}

// underDomainFold is underDomain for an ASCII parent in any letter case: it
// compares without lower-casing parent into a new string.
func underDomainFold(d, parent string) bool {
	d, parent = trimDot(d), trimDot(parent)
	if parent == "" || len(d) < len(parent) {
		return false
	}
	cut := len(d) - len(parent)
	if cut > 0 && d[cut-1] != '.' {
		return false
	}
	tail := d[cut:]
	for i := 0; i < len(parent); i++ {
		c := parent[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if tail[i] != c {
			return false
		}
	}
	return true
}

// isASCII reports whether s holds only ASCII bytes, reading it eight
// bytes at a time.
func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if binary.LittleEndian.Uint64([]byte(s[i:i+8]))&bytesHigh != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// listCovers reports whether one entry of a domain list taken from the
// request (badv, deal.wadomain) equals d, a normalised name, or is a parent
// of it. Entries are normalised as they are read; blank entries are ignored.
// It allocates nothing for ASCII entries in any letter case; an entry with
// non-ASCII characters is converted on each call (linear in the list: the
// request's lists are short, and a gate keeps no per-request state).
func listCovers(list []string, d string) bool {
	for _, e := range list {
		e = trimSpace(e)
		if e == "" {
			continue
		}
		if isASCII(e) {
			if underDomainFold(d, e) {
				return true
			}
			continue
		}
		if n, _ := normalizeDomain(e); underDomain(d, n) {
			return true
		}
	}
	return false
}

// domainSet is a set of normalised names compiled from configuration,
// matched by "equal to or subdomain of" with one map lookup per label of the
// name under test. It is immutable once built and safe for concurrent use.
type domainSet struct {
	m map[string]struct{}
	// lens has bit n set when a member is n bytes long (bit 63: 63 or
	// more): a name of another length is not looked up.
	lens uint64
}

// lenBit is the bit of lens for a name of n bytes.
func lenBit(n int) uint64 { return 1 << min(n, 63) }

// newDomainSet builds a set from names already normalised by configDomain.
func newDomainSet(names ...[]string) domainSet {
	n := 0
	for _, l := range names {
		n += len(l)
	}
	s := domainSet{m: make(map[string]struct{}, n)}
	for _, l := range names {
		for _, d := range l {
			if d = trimDot(d); d != "" {
				s.m[d] = struct{}{}
				s.lens |= lenBit(len(d))
			}
		}
	}
	return s
}

// match returns the member of the set that d, a normalised name, equals or
// is under (the longest such member), and whether there is one. It
// allocates nothing.
func (s domainSet) match(d string) (string, bool) {
	d = trimDot(d)
	for d != "" {
		if s.lens&lenBit(len(d)) == 0 {
			// No member is as long.
		} else if _, ok := s.m[d]; ok {
			return d, true
		}
		i := strings.IndexByte(d, '.')
		if i < 0 {
			break
		}
		d = d[i+1:]
	}
	return "", false
}

// len is the number of names in the set.
func (s domainSet) len() int { return len(s.m) }

// configDomain normalises a domain given in a gate's options and checks it
// is a domain name: one or more labels of the hostname rule (a single label
// such as "localhost" is allowed), one trailing dot tolerated. The error
// names neither the option nor the index; the caller adds them.
func configDomain(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return "", errors.New("is empty")
	}
	d, ok := normalizeDomain(s)
	d = trimDot(d)
	if !ok || d == "" || len(d) > maxHostnameLen {
		return "", errors.New("is not a domain name")
	}
	for l := range strings.SplitSeq(d, ".") {
		if !isLabel(l) {
			return "", errors.New("is not a domain name")
		}
	}
	return d, nil
}

// Placeholders of adomainVerify: each covers its subdomains.
var (
	defaultPlaceholders = []string{
		"advertiserdomain.com", "example.com", "example.org", "example.net", "test.com",
		"placeholder.com", "localhost", "foo.com", "bar.com",
	}
	// reservedTLDs (RFC 2606, RFC 6761): every name under them is a placeholder.
	reservedTLDs = []string{"example", "test", "invalid", "localhost"}
)
