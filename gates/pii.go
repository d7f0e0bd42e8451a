package gates

// pii (scanning): personal data in a bid's text is a broken
// or hostile creative. Each string value of the response is checked, in this
// order, for an email address (except retina image names such as
// logo@2x.png), an SSN-shaped string with valid parts, and a US phone
// number. Plain regexes (pii_test.go, gates/README.md) define what matches; this file finds
// candidates first (an '@', runs of digits) and confirms them by hand, and
// FuzzPIIDifferential shows the verdicts equal those of the plain regexes.
// A hit inside seatbid[].bid[] rejects that bid (200 / 350), elsewhere the
// response (3 / 300).

import (
	"bytes"
	"encoding/binary"

	"github.com/bidguard/bidguard/engine"
)

// piiOptions configures pii.
type piiOptions struct {
	// Email flags email addresses (default true).
	Email bool `yaml:"email"`
	// SSN flags SSN-shaped strings NNN-NN-NNNN with valid parts (default true).
	SSN bool `yaml:"ssn"`
	// Phone flags US phone numbers (default true; the embedded config turns it off).
	Phone bool `yaml:"phone"`
	// MaxNodes is the most JSON values scanned in each bid, and outside the
	// bids (default 10000, > 0).
	MaxNodes int `yaml:"maxNodes"`
	// OnScanLimit is fail (reject a bid, or the response, not fully scanned;
	// the default) or pass.
	OnScanLimit string `yaml:"onScanLimit"`
}

// Reasons of pii.
const (
	reasonEmail = "email address detected in output"
	reasonSSN   = "SSN-shaped string detected in output"
	reasonPhone = "phone-shaped string detected in output"
)

type pii struct {
	email, ssn, phone bool
	limit             scanLimit
}

var piiFactory = engine.Factory{
	Name: "pii", ResultName: "pii", Kind: engine.Scan,
	Options: func() any {
		return &piiOptions{Email: true, SSN: true, Phone: true, MaxNodes: defaultMaxNodes, OnScanLimit: onScanLimitFail}
	},
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*piiOptions)
		lim, err := newScanLimit(o.MaxNodes, o.OnScanLimit)
		if err != nil {
			return nil, err
		}
		return &pii{email: o.Email, ssn: o.SSN, phone: o.Phone, limit: lim}, nil
	},
}

func (g *pii) Kind() engine.Kind { return engine.Scan }

// Scan walks the response; each string is judged by match.
func (g *pii) Scan(in *engine.Input, sc *engine.Scope) { g.scan(in, sc) }

func (g *pii) scan(_ *engine.Input, sc scanScope) {
	if !g.email && !g.ssn && !g.phone {
		return
	}
	scanResponse(sc, g, g.limit)
}

// The shortest matches of the pii regexes: an email address a@b.cd, an
// SSN 123-45-6789; a phone number (234 567 8901) is longer than an SSN.
const (
	minEmailLen = 6
	minSSNLen   = 11
)

// minLen is the shortest string a check enabled may hit.
func (g *pii) minLen() int {
	if g.email {
		return minEmailLen
	}
	return minSSNLen
}

// match applies the enabled checks in order: email, SSN, phone.
func (g *pii) match(s []byte) string {
	if len(s) < g.minLen() {
		return ""
	}
	if len(s) < minSSNLen { // too short for an SSN or a phone number
		if g.email && mayHoldAt(s) && hasEmail(s) {
			return reasonEmail
		}
		return ""
	}
	if !g.phone && len(s) <= maxMarkedLen {
		// The embedded config on a short string: one pass finds whether
		// it holds an '@', and a '-' three bytes before another '-', without
		// which hasEmail and hasSSN cannot hit.
		at, dashes := piiMarks(s)
		if g.email && at && hasEmail(s) {
			return reasonEmail
		}
		if g.ssn && dashes && hasSSN(s) {
			return reasonSSN
		}
		return ""
	}
	if g.email && hasEmail(s) {
		return reasonEmail
	}
	if !g.ssn && !g.phone {
		return ""
	}
	if !g.phone { // the embedded config: SSNs found from their dashes
		if hasSSN(s) {
			return reasonSSN
		}
		return ""
	}
	ssn, phone := scanDigits(s, g.ssn, g.phone)
	switch {
	case ssn:
		return reasonSSN
	case phone:
		return reasonPhone
	}
	return ""
}

// Byte classes of the pii regexes (ASCII, as RE2 without flags).
const (
	clLocal  = 1 << iota // [a-zA-Z0-9._%+-]
	clDomain             // [a-zA-Z0-9.-]
	clAlpha              // [a-zA-Z]
	clDigit              // [0-9]
	clWord               // \w: [0-9A-Za-z_]
	clSep                // [-.\s], \s being [\t\n\f\r ]
)

var piiClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		b := byte(c)
		alpha := b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
		digit := b >= '0' && b <= '9'
		if alpha {
			t[c] |= clAlpha
		}
		if digit {
			t[c] |= clDigit
		}
		if alpha || digit {
			t[c] |= clLocal | clDomain | clWord
		}
		switch b {
		case '.', '-':
			t[c] |= clLocal | clDomain | clSep
		case '_':
			t[c] |= clLocal | clWord
		case '%', '+':
			t[c] |= clLocal
		case '\t', '\n', '\f', '\r', ' ':
			t[c] |= clSep
		}
	}
	return t
}()

func is(c byte, class uint8) bool { return piiClass[c]&class != 0 }

// hasEmail reports whether `[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}`
// has a match, among those regexp.FindAll returns (leftmost-first,
// non-overlapping), whose domain part is not a retina image name.
func hasEmail(s []byte) bool {
	pos := 0 // where the next match may start
	for {
		a := bytes.IndexByte(s[pos:], '@')
		if a < 0 {
			return false
		}
		at := pos + a
		// The local part is the run of local bytes before '@', from pos on:
		// '@' is not a local byte, so the leftmost match starts there.
		st := at
		for st > pos && is(s[st-1], clLocal) {
			st--
		}
		pos = at + 1
		if st == at {
			continue
		}
		end := emailDomainEnd(s, at+1)
		if end < 0 {
			continue
		}
		if !isRetinaName(s[at+1 : end]) {
			return true
		}
		pos = end
	}
}

// emailDomainEnd returns where `[a-zA-Z0-9.-]+\.[a-zA-Z]{2,}` matching at
// s[r:] ends under greedy backtracking (the last '.' of the domain run that
// has a domain byte before it and two letters after it), or -1.
func emailDomainEnd(s []byte, r int) int {
	re := r
	for re < len(s) && is(s[re], clDomain) {
		re++
	}
	for k := re - 3; k >= r+1; k-- {
		if s[k] == '.' && is(s[k+1], clAlpha) && is(s[k+2], clAlpha) {
			e := k + 3
			for e < re && is(s[e], clAlpha) {
				e++
			}
			return e
		}
	}
	return -1
}

// isRetinaName reports whether an email match's domain part is
// <digits>x.(png|jpg|jpeg|gif|webp|svg|avif), as in logo@2x.png.
func isRetinaName(d []byte) bool {
	i := 0
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	if i == 0 || len(d) < i+2 || d[i] != 'x' || d[i+1] != '.' {
		return false
	}
	switch string(d[i+2:]) {
	case "png", "jpg", "jpeg", "gif", "webp", "svg", "avif":
		return true
	}
	return false
}

// scanDigits looks at each run of ASCII digits for an SSN
// (`\b\d{3}-\d{2}-\d{4}\b` with area not 000, 666 or 9xx, group not 00,
// serial not 0000) and a US phone number
// (`\b(?:\+?1[-.\s]?)?\(?[2-9]\d{2}\)?[-.\s]\d{3}[-.\s]\d{4}\b`). It stops at
// the first SSN, or at the first phone number when SSNs are not wanted.
func scanDigits(s []byte, wantSSN, wantPhone bool) (ssn, phone bool) {
	n := len(s)
	for i := 0; i < n; {
		if !is(s[i], clDigit) {
			i++
			for i+8 <= n && !hasDigit(binary.LittleEndian.Uint64(s[i:])) {
				i += 8
			}
			continue
		}
		st := i
		for i < n && is(s[i], clDigit) {
			i++
		}
		switch i - st {
		case 3:
			if wantSSN && isSSNAt(s, st) {
				return true, phone
			}
		case 4:
			if wantPhone && !phone && isPhoneEndingAt(s, st) {
				phone = true
				if !wantSSN {
					return false, true
				}
			}
		}
	}
	return false, phone
}

// hasSSN is scanDigits for SSNs alone: every SSN has a '-' three bytes in,
// another three bytes further and eight bytes before its end, and a 3-digit
// run with a word boundary before it is a whole run.
func hasSSN(s []byte) bool {
	last := len(s) - 8 // the last place the first '-' may be
	for from := 3; from <= last; {
		d := bytes.IndexByte(s[from:last+1], '-')
		if d < 0 {
			return false
		}
		h := from + d
		if a := h - 3; s[h+3] == '-' && digitAt(s, a) && digitAt(s, a+1) && digitAt(s, a+2) && isSSNAt(s, a) {
			return true
		}
		// The next SSN's first '-' has three digits before it, so it is
		// not within three bytes of this '-'.
		from = h + 4
	}
	return false
}

// maxMarkedLen is the longest string piiMarks reads: on longer ones
// bytes.IndexByte's vector loop costs less than a word at a time.
const maxMarkedLen = 32

// piiMarks reports whether s, of minSSNLen bytes or more, may hold an '@',
// and a '-' three bytes before another '-' (as every SSN does), reading it a
// word at a time: false means it holds none.
func piiMarks(s []byte) (at, dashes bool) {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	const ats, dash = ones * '@', ones * '-'
	n := len(s)
	var fa, fd uint64
	for i := 0; i+11 <= n; i += 8 {
		x, y := binary.LittleEndian.Uint64(s[i:]), binary.LittleEndian.Uint64(s[i+3:])
		fa |= zeroBytes(x ^ ats)
		fd |= zeroBytes(x^dash) & zeroBytes(y^dash)
	}
	// The last 11 bytes, which the words above may have left out: '-' at
	// n-11 to n-4 three bytes before another, '@' at n-11 to n-1.
	x, y := binary.LittleEndian.Uint64(s[n-11:]), binary.LittleEndian.Uint64(s[n-8:])
	fa |= zeroBytes(x^ats) | zeroBytes(y^ats)
	fd |= zeroBytes(x^dash) & zeroBytes(y^dash)
	return fa&high != 0, fd&high != 0
}

// mayHoldAt reports whether s, of 4 to 16 bytes, holds an '@', from two
// words that overlap.
func mayHoldAt(s []byte) bool {
	const ats = 0x0101010101010101 * '@'
	n := len(s)
	var x, y uint64
	if n >= 8 {
		x, y = binary.LittleEndian.Uint64(s), binary.LittleEndian.Uint64(s[n-8:])
	} else {
		// The upper bytes, zero, differ from '@'.
		x, y = uint64(binary.LittleEndian.Uint32(s)), uint64(binary.LittleEndian.Uint32(s[n-4:]))
	}
	return (zeroBytes(x^ats)|zeroBytes(y^ats))&0x8080808080808080 != 0
}

// zeroBytes returns a word whose bytes have their high bit set where x has
// a zero byte, and maybe above one ("Bit Twiddling Hacks", haszero: a
// borrow may mark a byte above a zero one, never miss one).
func zeroBytes(x uint64) uint64 { return (x - 0x0101010101010101) &^ x }

// hasDigit reports whether one of the eight bytes of x is an ASCII digit
// (bytes between '0'-1 and '9'+1, exclusive, with the high bit clear:
// "Bit Twiddling Hacks", hasbetween).
func hasDigit(x uint64) bool {
	const ones, low7, high = 0x0101010101010101, 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	const m, n = '0' - 1, '9' + 1
	return (ones*(127+n)-(x&low7))&^x&((x&low7)+ones*(127-m))&high != 0
}

func wordAt(s []byte, i int) bool { return i >= 0 && i < len(s) && is(s[i], clWord) }

func digitAt(s []byte, i int) bool { return i >= 0 && i < len(s) && is(s[i], clDigit) }

// isSSNAt checks the SSN shape and parts for the 3-digit run at s[a:a+3].
func isSSNAt(s []byte, a int) bool {
	if wordAt(s, a-1) || len(s) < a+11 || s[a+3] != '-' || s[a+6] != '-' {
		return false
	}
	if !digitAt(s, a+4) || !digitAt(s, a+5) || wordAt(s, a+11) {
		return false
	}
	for k := a + 7; k < a+11; k++ {
		if !digitAt(s, k) {
			return false
		}
	}
	area, group, serial := s[a:a+3], s[a+4:a+6], s[a+7:a+11]
	switch {
	case string(area) == "000", string(area) == "666", area[0] == '9':
		return false
	case string(group) == "00", string(serial) == "0000":
		return false
	}
	return true
}

// isPhoneEndingAt reports whether the phone regex matches with its last
// four digits at s[p:p+4], a whole run of digits. Every match ends that way:
// `[-.\s]\d{4}\b` after a separator; the exchange `\d{3}` sits between two
// separators; the area code ends before an optional ')'. What remains is to
// try each optional part before the area code against the leading `\b`.
func isPhoneEndingAt(s []byte, p int) bool {
	if wordAt(s, p+4) || p < 5 || !is(s[p-1], clSep) {
		return false
	}
	x := p - 4 // the exchange, 3 digits between two separators
	if !digitAt(s, x) || !digitAt(s, x+1) || !digitAt(s, x+2) || !is(s[x-1], clSep) {
		return false
	}
	ae := x - 1 // just past the area code
	if ae >= 1 && s[ae-1] == ')' {
		ae--
	}
	a := ae - 3
	if a < 0 || s[a] < '2' || s[a] > '9' || !digitAt(s, a+1) || !digitAt(s, a+2) {
		return false
	}
	if phoneStartsAt(s, a) {
		return true
	}
	return a >= 1 && s[a-1] == '(' && phoneStartsAt(s, a-1)
}

// phoneStartsAt tries the optional `\+?1[-.\s]?` before q and the `\b` at
// the start of the match.
func phoneStartsAt(s []byte, q int) bool {
	boundary := func(m int) bool { return wordAt(s, m-1) != wordAt(s, m) }
	if boundary(q) {
		return true
	}
	for _, one := range [2]int{q - 1, q - 2} { // "1" right before, or "1" and a separator
		if one < 0 || s[one] != '1' || (one == q-2 && !is(s[q-1], clSep)) {
			continue
		}
		if boundary(one) || (one >= 1 && s[one-1] == '+' && boundary(one-1)) {
			return true
		}
	}
	return false
}

var (
	_ engine.ScanGate = (*pii)(nil)
	_ shortBound      = (*pii)(nil)
)
