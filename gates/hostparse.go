package gates

// Reading the host of a URL with a special scheme (http, https) the way the
// WHATWG URL Standard does, for urlSafety: the authority after any run of '/'
// and '\', the host percent-decoded, mapped through IDNA when it is not ASCII,
// and parsed as an IPv6 literal ([...]), as an IPv4 address when its last
// label is a number (1-4 parts, decimal, 0-prefixed octal or 0x hex, the last
// part filling the remaining bytes), or else as a domain name. Names are never
// resolved. Everything works on the caller's bytes and a stack buffer: only a
// host with non-ASCII characters (IDNA) allocates.

import (
	"encoding/binary"
	"math/bits"
	"strings"
)

// hostKind is what a host parsed as.
type hostKind uint8

const (
	hostName hostKind = iota // a domain name, lower-case ASCII
	hostIPv4
	hostIPv6
)

// maxHostBytes bounds a host once decoded: a DNS name has at most 253
// characters, so a longer host is refused rather than judged.
const maxHostBytes = 255

// parsedHost is a host read by parseHost. name points into the caller's
// buffer and is valid as long as it.
type parsedHost struct {
	kind hostKind
	name []byte   // hostName: lower-case, one trailing dot kept
	ip4  uint32   // hostIPv4
	ip6  [16]byte // hostIPv6
	zone bool     // hostIPv6 with a zone identifier (%25eth0)
}

// urlAuthority splits a URL that starts with a special scheme: it returns the
// index after the scheme's ':' (scheme is u[:colon]), the authority (after any
// run of '/' and '\', up to the first '/', '\', '?' or '#'), and whether an
// '@' appears before the first '/', '?' or '#', which is userinfo to the
// WHATWG parser and also to parsers that do not read '\' as '/'
// ("https://a.com\@10.0.0.1/" is a.com to a browser and 10.0.0.1 to others).
// ok is false when u does not start with a scheme.
func urlAuthority(u string) (colon int, auth string, userinfo, ok bool) {
	if len(u) == 0 || !isASCIIAlpha(u[0]) {
		return 0, "", false, false
	}
	i := 1
	for i < len(u) && isSchemeChar(u[i]) {
		i++
	}
	if i >= len(u) || u[i] != ':' {
		return 0, "", false, false
	}
	colon = i
	i++
	for i < len(u) && (u[i] == '/' || u[i] == '\\') {
		i++
	}
	rest := u[i:]
	// One pass: the authority ends at the first '/', '\\', '?' or '#'; an
	// '@' is userinfo up to the first '/', '?' or '#'.
	end := -1
	for j := 0; j < len(rest); j++ {
		c := rest[j]
		if !authorityEnd[c] {
			continue
		}
		switch c {
		case '/', '?', '#':
			if end < 0 {
				end = j
			}
			return colon, rest[:end], userinfo, true
		case '\\':
			if end < 0 {
				end = j
			}
			if userinfo {
				return colon, rest[:end], true, true
			}
		case '@':
			userinfo = true
			if end >= 0 {
				return colon, rest[:end], true, true
			}
		}
	}
	if end < 0 {
		end = len(rest)
	}
	return colon, rest[:end], userinfo, true
}

// authorityEnd tells the bytes urlAuthority stops at: '/', '\\', '?', '#'
// and '@'.
var authorityEnd = [256]bool{'/': true, '\\': true, '?': true, '#': true, '@': true}

func isASCIIAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isSchemeChar(c byte) bool {
	return isASCIIAlpha(c) || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// splitHostPort splits an authority without userinfo into its host and
// checks the port: digits only (none is fine) and at most 65535.
func splitHostPort(auth string) (host string, ok bool) {
	host, port := auth, ""
	if strings.HasPrefix(auth, "[") {
		j := strings.IndexByte(auth, ']')
		if j < 0 {
			return "", false
		}
		host, port = auth[:j+1], auth[j+1:]
		if port != "" {
			if port[0] != ':' {
				return "", false
			}
			port = port[1:]
		}
	} else if j := strings.IndexByte(auth, ':'); j >= 0 {
		host, port = auth[:j], auth[j+1:]
	}
	v := 0
	for i := 0; i < len(port); i++ {
		if !isDigit(port[i]) {
			return "", false
		}
		if v = v*10 + int(port[i]-'0'); v > 65535 {
			return "", false
		}
	}
	return host, true
}

// parseHost parses a host as the WHATWG URL parser does for a special
// scheme, using buf for the decoded name. ok is false for a host that parser
// rejects, and also for one bidguard refuses to judge: empty labels, a label
// over 63 or a name over 253 characters, or a character other than letters,
// digits, '-', '_' and '.' in a name (which also refuses a macro such as
// ${AUCTION_AD_ID} in the host: the exchange substitutes bidder-chosen values
// before it fires the URL).
func parseHost(raw string, buf *[maxHostBytes]byte) (h parsedHost, ok bool) {
	if raw == "" {
		return h, false
	}
	if raw[0] == '[' {
		if raw[len(raw)-1] != ']' {
			return h, false
		}
		h.kind = hostIPv6
		h.ip6, h.zone, ok = parseIPv6Zone(raw[1 : len(raw)-1])
		return h, ok
	}
	if h, ok, done := parsePlainName(raw, buf); done {
		return h, ok
	}
	// Percent-decode and lower-case into buf.
	n, ascii := 0, true
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '%' && i+2 < len(raw) {
			hi, ok1 := markupUnhex(raw[i+1])
			lo, ok2 := markupUnhex(raw[i+2])
			if ok1 && ok2 {
				c = hi<<4 | lo
				i += 2
			}
		}
		if n == len(buf) {
			return h, false
		}
		if c >= 0x80 {
			ascii = false
		}
		buf[n] = markupLower(c)
		n++
	}
	name := buf[:n]
	if !ascii {
		d, valid := normalizeDomain(string(name))
		if !valid || len(d) > len(buf) || !isASCII(d) {
			return h, false
		}
		name = buf[:copy(buf[:], d)]
	}
	for _, c := range name {
		if !isLDH(c) && c != '_' && c != '.' {
			return h, false
		}
	}
	if endsInNumber(name) {
		h.kind = hostIPv4
		h.ip4, ok = parseIPv4(name)
		return h, ok
	}
	if !validHostName(name) {
		return h, false
	}
	h.kind, h.name = hostName, name
	return h, true
}

// nameByte is, for each byte a host of letters, digits, '-', '_' and '.'
// holds, that byte lower-cased; 0 for every other byte ('%', non-ASCII,
// anything parseHost refuses or has to decode first).
var nameByte = func() (t [256]byte) {
	for c := 0; c < 256; c++ {
		if b := markupLower(byte(c)); isLDH(b) || b == '_' || b == '.' {
			t[c] = b
		}
	}
	return t
}()

// parsePlainName is parseHost for a host of letters, digits, '-', '_' and
// '.' alone whose last label does not begin with a digit (a name, not an
// IPv4 address: every IPv4 number begins with one), in one pass that
// lower-cases it into buf and checks its labels. done is false for any
// other host, which parseHost reads the long way.
func parsePlainName(raw string, buf *[maxHostBytes]byte) (h parsedHost, ok, done bool) {
	n, name, ok, done := readPlainName(raw, buf)
	if n < len(raw) || !done {
		return h, false, false
	}
	if ok {
		h.kind, h.name = hostName, name
	}
	return h, ok, true
}

// readPlainName reads as parsePlainName the run of letters, digits, '-',
// '_' and '.' that begins s, of n bytes, into name (in buf). done is false
// when the run is empty, longer than buf or ends in a label that begins
// with a digit.
func readPlainName(s string, buf *[maxHostBytes]byte) (n int, name []byte, ok, done bool) {
	start, long := 0, false // the label being read; a label empty or over 63 characters
	// Eight bytes at a time while eight are left in s and in buf: the
	// name bytes of the word, lower-cased, are stored at once (the bytes
	// stored past the run are never read), its dots are visited alone.
	ended := false
	for n+8 <= len(s) && n+8 <= len(buf) {
		// valid: the bytes nameByte maps (ASCII letters and digits, '-',
		// '_', '.'); lowered: the word with its upper-case letters lowered.
		// The lane tests are exact: no borrow or carry crosses bytes.
		x := binary.LittleEndian.Uint64([]byte(s[n : n+8]))
		letters := bytesBetween(x|bytesOnes*0x20, 'a'-1, 'z'+1)
		dots := bytesEqual(x, '.')
		valid := letters | bytesBetween(x, '-'-1, '9'+1)&^bytesEqual(x, '/') | bytesEqual(x, '_')
		lowered := x | letters>>2
		k := 8 // the name bytes the word begins with
		if inv := ^valid & bytesHigh; inv != 0 {
			k, ended = bits.TrailingZeros64(inv)>>3, true
		}
		binary.LittleEndian.PutUint64(buf[n:n+8], lowered)
		for dots &= 1<<(8*k) - 1; dots != 0; dots &= dots - 1 {
			p := n + bits.TrailingZeros64(dots)>>3
			long = long || p == start || p-start > maxLabelLen
			start = p + 1
		}
		n += k
		if ended {
			break
		}
	}
	for ; !ended && n < len(s); n++ {
		c := nameByte[s[n]]
		if c == 0 {
			break
		}
		if n == len(buf) {
			return n, nil, false, false
		}
		buf[n] = c
		if c == '.' {
			long = long || n == start || n-start > maxLabelLen
			start = n + 1
		}
	}
	if n == 0 {
		return n, nil, false, false
	}
	last, size := start, n-start // the last label, one trailing dot ignored
	if size == 0 && n > 1 {
		for last = n - 1; last > 0 && buf[last-1] != '.'; last-- {
		}
		size = n - 1 - last
	}
	if size > 0 && isDigit(buf[last]) {
		return n, nil, false, false
	}
	size = n
	if buf[n-1] == '.' {
		size--
	}
	if long || n-start > maxLabelLen || size == 0 || size > maxHostnameLen {
		return n, nil, false, true
	}
	return n, buf[:n], true, true
}

// bytesBetween returns the high bit of each byte of x that is ASCII and
// strictly between m and n (m < n <= 128; "Bit Twiddling Hacks",
// hasbetween, exact per byte).
func bytesBetween(x uint64, m, n byte) uint64 {
	const low7 = bytesOnes * 0x7f
	return (bytesOnes*(127+uint64(n)) - (x & low7)) &^ x & ((x & low7) + bytesOnes*(127-uint64(m))) & bytesHigh
}

// bytesEqual returns the high bit of each byte of x equal to c, an ASCII
// byte (exact per byte: the low seven bits are added without a carry out).
func bytesEqual(x uint64, c byte) uint64 {
	const low7 = bytesOnes * 0x7f
	y := x ^ bytesOnes*uint64(c)
	return ^((y&low7 + low7) | y) & bytesHigh
}

// validHostName checks the DNS limits of a lower-case name: labels of 1-63
// characters (one trailing dot allowed), 253 characters at most.
func validHostName(name []byte) bool {
	if len(name) > 0 && name[len(name)-1] == '.' {
		name = name[:len(name)-1]
	}
	if len(name) == 0 || len(name) > maxHostnameLen {
		return false
	}
	start := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			if l := i - start; l == 0 || l > maxLabelLen {
				return false
			}
			start = i + 1
		}
	}
	return true
}

// lastLabel returns the last dot-separated part of a host, ignoring one
// trailing dot, and whether there is one (a lone "." has none).
func lastLabel(h []byte) ([]byte, bool) {
	if len(h) > 0 && h[len(h)-1] == '.' {
		h = h[:len(h)-1]
		if len(h) == 0 {
			return nil, false
		}
	}
	for i := len(h) - 1; i >= 0; i-- {
		if h[i] == '.' {
			return h[i+1:], true
		}
	}
	return h, true
}

// endsInNumber is the WHATWG "ends in a number" test: the last label is all
// digits, or parses as an IPv4 number (0x7f, 0x).
func endsInNumber(h []byte) bool {
	last, ok := lastLabel(h)
	if !ok || len(last) == 0 {
		return false
	}
	digits := true
	for _, c := range last {
		if !isDigit(c) {
			digits = false
			break
		}
	}
	if digits {
		return true
	}
	_, ok = parseIPv4Number(last)
	return ok
}

// ipv4Overflow saturates IPv4 numbers: any value above it fails every check.
const ipv4Overflow = 1 << 33

// parseIPv4Number parses one part of an IPv4 host: decimal, octal after a
// leading 0, hex after 0x (lower-case input). An empty part after a prefix
// is 0. Values saturate above 2^33.
func parseIPv4Number(p []byte) (uint64, bool) {
	if len(p) == 0 {
		return 0, false
	}
	radix := uint64(10)
	switch {
	case len(p) >= 2 && p[0] == '0' && p[1] == 'x':
		radix, p = 16, p[2:]
	case len(p) >= 2 && p[0] == '0':
		radix, p = 8, p[1:]
	}
	var v uint64
	for _, c := range p {
		var d uint64
		switch {
		case isDigit(c):
			d = uint64(c - '0')
		case radix == 16 && c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		default:
			return 0, false
		}
		if d >= radix {
			return 0, false
		}
		if v = v*radix + d; v > ipv4Overflow {
			v = ipv4Overflow
		}
	}
	return v, true
}

// parseIPv4 is the WHATWG IPv4 parser on a lower-case host that ends in a
// number: 1-4 parts (one trailing dot ignored), every part but the last at
// most 255, the last filling the remaining bytes (127.1 is 127.0.0.1,
// 2130706433 is 127.0.0.1).
func parseIPv4(h []byte) (uint32, bool) {
	if len(h) > 1 && h[len(h)-1] == '.' {
		h = h[:len(h)-1]
	}
	var parts [4]uint64
	n, start := 0, 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			continue
		}
		if n == len(parts) {
			return 0, false
		}
		v, ok := parseIPv4Number(h[start:i])
		if !ok {
			return 0, false
		}
		parts[n], n, start = v, n+1, i+1
	}
	var ip uint64
	for i := 0; i < n-1; i++ {
		if parts[i] > 255 {
			return 0, false
		}
		ip |= parts[i] << (8 * (3 - i))
	}
	if parts[n-1] >= 1<<(8*(5-n)) {
		return 0, false
	}
	return uint32(ip | parts[n-1]), true
}

// parseIPv6Zone parses the inside of an IPv6 literal's brackets. A zone
// identifier (fe80::1%25eth0, or %eth0) is split off and reported; the
// WHATWG parser rejects it, and urlSafety judges the address without it.
func parseIPv6Zone(s string) (a [16]byte, zone, ok bool) {
	if i := strings.IndexByte(s, '%'); i >= 0 {
		z := s[i+1:]
		z = strings.TrimPrefix(z, "25")
		if z == "" {
			return a, true, false
		}
		s, zone = s[:i], true
	}
	a, ok = parseIPv6(s)
	return a, zone, ok
}

// parseIPv6 is the WHATWG IPv6 parser: eight groups of up to four hex digits,
// one "::" compressing zeros, an optional dotted-decimal IPv4 address (no
// leading zeros) in the last 32 bits.
func parseIPv6(s string) (out [16]byte, ok bool) {
	var a [8]uint16
	piece, compress, p := 0, -1, 0
	if len(s) > 0 && s[0] == ':' {
		if len(s) < 2 || s[1] != ':' {
			return out, false
		}
		p, piece, compress = 2, 1, 1
	}
	for p < len(s) {
		if piece == 8 {
			return out, false
		}
		if s[p] == ':' {
			if compress != -1 {
				return out, false
			}
			p++
			piece++
			compress = piece
			continue
		}
		value, length := 0, 0
		for length < 4 && p < len(s) {
			d, hex := markupUnhex(s[p])
			if !hex {
				break
			}
			value, p, length = value*16+int(d), p+1, length+1
		}
		if p < len(s) && s[p] == '.' {
			if length == 0 || piece > 6 {
				return out, false
			}
			p -= length
			seen := 0
			for p < len(s) {
				v := -1
				if seen > 0 {
					if s[p] != '.' || seen >= 4 {
						return out, false
					}
					p++
				}
				if p >= len(s) || !isDigit(s[p]) {
					return out, false
				}
				for p < len(s) && isDigit(s[p]) {
					d := int(s[p] - '0')
					switch {
					case v == -1:
						v = d
					case v == 0:
						return out, false
					default:
						v = v*10 + d
					}
					if v > 255 {
						return out, false
					}
					p++
				}
				a[piece] = a[piece]<<8 | uint16(v)
				seen++
				if seen == 2 || seen == 4 {
					piece++
				}
			}
			if seen != 4 {
				return out, false
			}
			break
		}
		if p < len(s) {
			if s[p] != ':' {
				return out, false
			}
			p++
			if p >= len(s) {
				return out, false
			}
		}
		a[piece] = uint16(value)
		piece++
	}
	if compress != -1 {
		swaps := piece - compress
		piece = 7
		for piece != 0 && swaps > 0 {
			a[piece], a[compress+swaps-1] = a[compress+swaps-1], a[piece]
			piece--
			swaps--
		}
	} else if piece != 8 {
		return out, false
	}
	for i, v := range a {
		out[2*i], out[2*i+1] = byte(v>>8), byte(v)
	}
	return out, true
}
