package gates

// urlSafety (OpenRTB 2.6 §4.2.3 Bid.nurl, burl, lurl, iurl): the exchange
// fires nurl, burl and lurl from its own servers and shows iurl, so a URL
// aimed at a private host is server-side request forgery. Each present field
// must be an absolute https URL (http too with allowHttp) of at most
// maxUrlBytes, without control characters, spaces or userinfo, whose host is
// neither an internal name (internalDomains, a single label,
// extraInternalNames) nor an address in a special range. The host is
// read as the WHATWG URL parser reads it (hostparse.go): percent-decoded,
// IDNA-mapped, IPv4 in every WHATWG spelling (2130706433, 0177.0.0.1,
// 0x7f000001, 127.1), IPv6 with IPv4 embedded in mapped, compatible, NAT64,
// 6to4 and Teredo positions (iprange.go). Names are never resolved. Macros
// such as ${AUCTION_PRICE} are opaque text, except in the host, where they
// make the host unjudgeable: bad host.
//
// Checks, the first failure of each field reported, fields in the order nurl,
// burl, lurl, iurl: too long; control character; space; not absolute; scheme
// not https; userinfo; bad host; then the host's class. Zero allocations
// unless a host holds non-ASCII characters (IDNA).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bidguard/bidguard/engine"
)

// urlSafetyOptions configures urlSafety.
type urlSafetyOptions struct {
	// AllowHTTP accepts the http scheme besides https (default false).
	AllowHTTP bool `yaml:"allowHttp"`
	// MaxURLBytes is the longest URL accepted, in bytes (default 8,192: win
	// and billing notices carry the exchange's encrypted context, often over
	// 2 KB).
	MaxURLBytes int `yaml:"maxUrlBytes"`
	// ExtraInternalNames are more internal domains (each covers its
	// subdomains), such as the exchange's own zone ("corp.exchange.net").
	ExtraInternalNames []string `yaml:"extraInternalNames"`
}

const defaultMaxURLBytes = 8192

func (o *urlSafetyOptions) validate() ([]string, error) {
	var errs []error
	if o.MaxURLBytes <= 0 {
		errs = append(errs, fmt.Errorf("maxUrlBytes must be > 0, got %d", o.MaxURLBytes))
	}
	names := make([]string, 0, len(o.ExtraInternalNames))
	for i, n := range o.ExtraInternalNames {
		d, err := configDomain(n)
		if err != nil {
			errs = append(errs, fmt.Errorf("extraInternalNames[%d] %q %w", i, n, err))
			continue
		}
		names = append(names, d)
	}
	return names, errors.Join(errs...)
}

type urlSafety struct {
	allowHTTP bool
	maxURL    int       // maxUrlBytes
	internal  domainSet // extraInternalNames
}

var urlSafetyFactory = engine.Factory{
	Name: "urlSafety", ResultName: "rtb.url-safety", Kind: engine.PerBid,
	Options: func() any { return &urlSafetyOptions{MaxURLBytes: defaultMaxURLBytes} },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*urlSafetyOptions)
		names, err := o.validate()
		if err != nil {
			return nil, err
		}
		return &urlSafety{allowHTTP: o.AllowHTTP, maxURL: o.MaxURLBytes, internal: newDomainSet(names)}, nil
	},
}

// Codes of every urlSafety rejection.
const (
	urlSafetyLoss = engine.LossInvalidBidResponse
	urlSafetyNBR  = engine.NBRResponseRejectedGeneral
)

// urlWhy is why a URL is unsafe (the <why> of the reason).
type urlWhy uint8

const (
	urlSafe urlWhy = iota
	whyNotAbsolute
	whyScheme
	whyUserinfo
	whyControl
	whySpace
	whyTooLong
	whyBadHost
	whyInternalName
	whyPrivate
	whyLoopback
	whyLinkLocal
	whyShared
	whyMulticast
	whyReserved
	whyEmbedded
	numURLWhy
)

var urlWhyText = [numURLWhy]string{
	whyNotAbsolute:  "not absolute",
	whyScheme:       "scheme not https",
	whyUserinfo:     "userinfo",
	whyControl:      "control character",
	whySpace:        "space",
	whyTooLong:      "too long",
	whyBadHost:      "bad host",
	whyInternalName: "internal name",
	whyPrivate:      "private address",
	whyLoopback:     "loopback address",
	whyLinkLocal:    "link-local address",
	whyShared:       "shared address",
	whyMulticast:    "multicast address",
	whyReserved:     "reserved address",
	whyEmbedded:     "embedded private address",
}

// addrWhy maps an address class to its reason.
var addrWhy = [...]urlWhy{
	addrPublic:    urlSafe,
	addrPrivate:   whyPrivate,
	addrLoopback:  whyLoopback,
	addrLinkLocal: whyLinkLocal,
	addrShared:    whyShared,
	addrMulticast: whyMulticast,
	addrReserved:  whyReserved,
	addrEmbedded:  whyEmbedded,
}

var urlSafetyFields = [...]string{"nurl", "burl", "lurl", "iurl"}

// urlSafetyReasons holds every reason, built once so that a rejection
// allocates nothing.
var urlSafetyReasons = func() (r [len(urlSafetyFields)][numURLWhy]string) {
	for i, f := range urlSafetyFields {
		for w := urlWhy(1); w < numURLWhy; w++ {
			r[i][w] = "unsafe url in " + f + ": " + urlWhyText[w]
		}
	}
	return r
}()

func (g *urlSafety) Kind() engine.Kind { return engine.PerBid }

// Prepare never skips: every bid is judged.
func (g *urlSafety) Prepare(*engine.Input) string { return "" }

// CheckBid judges nurl, burl, lurl and iurl in that order; an empty field is
// absent.
// The fields are read one by one, not ranged over as an array copied from
// the bid.
func (g *urlSafety) CheckBid(_ *engine.Input, b *engine.Bid) engine.Verdict {
	// One host buffer for the four fields, zeroed once: judgeIn reads only
	// the bytes it wrote for the URL at hand.
	var buf [maxHostBytes]byte
	if w := g.judgeField(b.NURL, &buf); w != urlSafe {
		return urlSafetyReject(0, w)
	}
	if w := g.judgeField(b.BURL, &buf); w != urlSafe {
		return urlSafetyReject(1, w)
	}
	if w := g.judgeField(b.LURL, &buf); w != urlSafe {
		return urlSafetyReject(2, w)
	}
	if w := g.judgeField(b.IURL, &buf); w != urlSafe {
		return urlSafetyReject(3, w)
	}
	return engine.Pass()
}

// judgeField judges a URL field: an empty one is absent, so safe.
func (g *urlSafety) judgeField(u string, buf *[maxHostBytes]byte) urlWhy {
	if u == "" {
		return urlSafe
	}
	return g.judgeIn(u, buf)
}

func urlSafetyReject(field int, w urlWhy) engine.Verdict {
	return engine.Reject(urlSafetyReasons[field][w], urlSafetyLoss, urlSafetyNBR)
}

// judge returns why u is unsafe, or urlSafe.
func (g *urlSafety) judge(u string) urlWhy {
	var buf [maxHostBytes]byte
	return g.judgeIn(u, &buf)
}

// judgeIn is judge reading the host into buf, whatever buf holds: every
// byte of it read is written first (plainHost, parseHost).
func (g *urlSafety) judgeIn(u string, buf *[maxHostBytes]byte) urlWhy {
	if len(u) > g.maxURL {
		return whyTooLong
	}
	if w := urlCharacters(u); w != urlSafe {
		return w
	}
	if name, ok, done := g.plainHost(u, buf); done {
		switch {
		case !ok:
			return whyBadHost
		case g.internalName(name):
			return whyInternalName
		}
		return urlSafe
	}
	colon, auth, userinfo, ok := urlAuthority(u)
	if !ok {
		return whyNotAbsolute
	}
	if scheme := u[:colon]; !(len(scheme) == 5 && markupNameIs(markupBytes(scheme), "https")) &&
		!(g.allowHTTP && len(scheme) == 4 && markupNameIs(markupBytes(scheme), "http")) {
		return whyScheme
	}
	if userinfo {
		return whyUserinfo
	}
	host, ok := splitHostPort(auth)
	if !ok {
		return whyBadHost
	}
	h, ok := parseHost(host, buf)
	switch {
	case !ok:
		return whyBadHost
	case h.kind == hostIPv4:
		return addrWhy[classifyIPv4(h.ip4)]
	case h.kind == hostIPv6:
		w := addrWhy[classifyIPv6(&h.ip6)]
		if w == urlSafe && h.zone {
			// Zones belong to link-local and multicast scopes; WHATWG
			// rejects them.
			return whyBadHost
		}
		return w
	}
	if g.internalName(h.name) {
		return whyInternalName
	}
	return urlSafe
}

// plainHost is judge's reading of the scheme, the authority and the host
// for the usual URL: "https://" (or "http://" with allowHttp) as written,
// then a host of letters, digits, '-', '_' and '.' that ends the authority
// ('/', '?', '#' or the end follow it: no userinfo, no port) and reads as
// a name (parsePlainName), returned lower-cased in buf. done is false for
// any other URL, which judge reads the long way.
func (g *urlSafety) plainHost(u string, buf *[maxHostBytes]byte) (name []byte, ok, done bool) {
	rest, https := strings.CutPrefix(u, "https://")
	if !https {
		var http bool
		if rest, http = strings.CutPrefix(u, "http://"); !http || !g.allowHTTP {
			return nil, false, false
		}
	}
	n, name, ok, done := readPlainName(rest, buf)
	if n < len(rest) && rest[n] != '/' && rest[n] != '?' && rest[n] != '#' {
		return nil, false, false
	}
	return name, ok, done
}

// urlCharacters reports a control character (C0, DEL, C1), else a space
// (U+0020 or another Unicode white space), anywhere in u.
func urlCharacters(u string) urlWhy {
	space := false
	for i := 0; i < len(u); {
		// Sixteen, then eight printable ASCII bytes at a time, in loops of
		// their own: most of a URL.
		for i+16 <= len(u) && plainWords(binary.LittleEndian.Uint64([]byte(u[i:i+8])), binary.LittleEndian.Uint64([]byte(u[i+8:i+16]))) {
			i += 16
		}
		if i+8 <= len(u) && plainWord(binary.LittleEndian.Uint64([]byte(u[i:i+8]))) {
			i += 8
			continue
		}
		if i >= len(u) {
			break
		}
		c := u[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return whyControl
			}
			space = space || c == ' '
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(u[i:])
		if r >= 0x80 && r <= 0x9f {
			return whyControl
		}
		space = space || unicode.IsSpace(r)
		i += n
	}
	if space {
		return whySpace
	}
	return urlSafe
}

// plainWord reports whether the eight bytes of x are all printable ASCII
// other than the space (0x21-0x7e). SWAR: a byte below n sets its high bit
// in (x - n) &^ x; a byte equal to 0x7f is one below 0x80 after +1.
func plainWord(x uint64) bool { return notPlain(x)&0x8080808080808080 == 0 }

// plainWords is plainWord(x) && plainWord(y) with one test.
func plainWords(x, y uint64) bool { return (notPlain(x)|notPlain(y))&0x8080808080808080 == 0 }

// notPlain has the high bit of each byte of x that is not 0x21-0x7e set
// (and maybe others of such a word's bytes: only whether any is set is read).
func notPlain(x uint64) uint64 {
	const lo = 0x0101010101010101
	below := (x - lo*0x21) &^ x
	del := x ^ (lo * 0x7f)
	isDel := (del - lo) &^ del
	return below | isDel | x
}

// internalDomains are the built-in internal names; each covers itself and
// its subdomains. Kubernetes' cluster.local is under local.
var internalDomains = [...]string{
	// Special-use (RFC 6761, RFC 6762, RFC 8375) or reserved for private
	// use (.internal), and the names systems give themselves.
	"localhost", "local", "internal", "home.arpa", "localhost.localdomain",
	// Kubernetes services (<service>.<namespace>.svc), which resolvers
	// complete with the cluster domain.
	"svc",
	// Public wildcard DNS that answers with the address written in the
	// name (127.0.0.1.nip.io, 10-0-0-1.sslip.io) or always with loopback
	// (*.localtest.me, *.lvh.me).
	"nip.io", "sslip.io", "xip.io", "localtest.me", "lvh.me",
}

// internalLastByte tells the last bytes of internalDomains: a name that
// ends otherwise is under none of them.
var internalLastByte = func() (t [256]bool) {
	for _, d := range internalDomains {
		t[d[len(d)-1]] = true
	}
	return t
}()

// internalName reports whether a lower-case host name (one trailing dot
// allowed) is internal: one of internalDomains or under one, a single label
// (resolved through the resolver's search list, such as Kubernetes'
// svc.cluster.local), or a name under extraInternalNames.
func (g *urlSafety) internalName(name []byte) bool {
	if len(name) > 0 && name[len(name)-1] == '.' {
		name = name[:len(name)-1]
	}
	if bytes.IndexByte(name, '.') < 0 {
		return true
	}
	if internalLastByte[name[len(name)-1]] {
		for _, d := range internalDomains {
			if hostUnder(name, d) {
				return true
			}
		}
	}
	if g.internal.len() == 0 {
		return false
	}
	for d := name; len(d) > 0; {
		if _, ok := g.internal.m[string(d)]; ok {
			return true
		}
		i := 0
		for i < len(d) && d[i] != '.' {
			i++
		}
		if i == len(d) {
			break
		}
		d = d[i+1:]
	}
	return false
}

// hostUnder is underDomain on a host's bytes (without a trailing dot),
// comparing in place.
func hostUnder(name []byte, d string) bool {
	n := len(name) - len(d)
	return n >= 0 && string(name[n:]) == d && (n == 0 || name[n-1] == '.')
}

var _ engine.BidGate = (*urlSafety)(nil)
