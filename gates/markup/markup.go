package markup

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// Reading is how a creative is read: as the document a browser renders
// (HTML), the XML a video or audio player reads (VAST), or the JSON a native
// renderer reads (Native). A creative may be read under several.
type Reading uint8

const (
	HTML Reading = 1 << iota
	VAST
	Native
)

// Sniff returns the readings that apply to a creative whose media type is
// not known: HTML always (a browser renders any bytes as HTML), VAST when
// its first element is VAST or it opens with an XML declaration, Native
// when it is a JSON object.
func Sniff(adm []byte) Reading {
	r := HTML
	s := bytes.TrimLeft(bytes.TrimPrefix(adm, []byte("\xef\xbb\xbf")), " \t\r\n\f")
	switch {
	case len(s) > 0 && s[0] == '{':
		r |= Native
	case looksLikeVAST(s):
		r |= VAST
	}
	return r
}

// Limits bound how far a creative is read. Past any of them the creative is
// Unreadable: what lies beyond a limit is never taken as safe.
type Limits struct {
	// MaxDepth is how deep documents nest: srcdoc, script-written markup,
	// eval'd code, javascript: and data: URLs, VAST HTMLResource, native
	// jstracker and vasttag, each a level.
	MaxDepth int
	// MaxDecodedBytes bounds the bytes produced by decoding and nesting
	// over the whole creative (constant strings evaluated, nested
	// documents read).
	MaxDecodedBytes int
}

// MaxDecodedBytesLimit is the largest MaxDecodedBytes Validate accepts (1 GiB).
const MaxDecodedBytesLimit = 1 << 30

// DefaultLimits are the limits of the gates' default configuration.
var DefaultLimits = Limits{MaxDepth: 8, MaxDecodedBytes: 4 << 20}

// Validate reports limits that would read nothing.
func (l Limits) Validate() error {
	var errs []error
	if l.MaxDepth < 1 || l.MaxDepth > 64 {
		errs = append(errs, fmt.Errorf("maxDepth must be in 1..64, got %d", l.MaxDepth))
	}
	if l.MaxDecodedBytes < 1 || l.MaxDecodedBytes > MaxDecodedBytesLimit {
		errs = append(errs, fmt.Errorf("maxDecodedBytes must be in 1..%d, got %d", MaxDecodedBytesLimit, l.MaxDecodedBytes))
	}
	return errors.Join(errs...)
}

// Finding is what reading a creative found, as bits.
type Finding uint8

const (
	// Unreadable: a DOCTYPE internal subset, an entity declaration, a
	// document or script that does not parse, or a limit reached.
	Unreadable Finding = 1 << iota
	// ForcedRedirect: a navigation of the page that can run without a
	// user gesture.
	ForcedRedirect
	// JavascriptURL: a javascript: or data: URL that runs without a
	// gesture and navigates or decodes-and-runs.
	JavascriptURL
	// DecodeAndRun: code or markup built at run time from a decoder
	// (atob, unescape, ...) handed to something that runs it.
	DecodeAndRun
)

// Judge reads a creative under the readings r and returns what it does that
// a creative must not. It never fails: what it cannot read is Unreadable.
// Safe for concurrent use; it allocates (the parsers build trees), roughly
// in proportion to the creative's size.
func Judge(adm []byte, r Reading, lim Limits) Finding {
	f, _ := read(adm, r, lim, true, false)
	return f
}

// Insecure reports whether a creative read under r makes the browser or
// player load a resource over plain http. Malformed markup is read as far
// as it goes, never judged for being malformed.
func Insecure(adm []byte, r Reading, lim Limits) bool {
	_, insecure := read(adm, r, lim, false, true)
	return insecure
}

// Read is Judge and Insecure in one reading: the markup is parsed once.
func Read(adm []byte, r Reading, lim Limits) (f Finding, insecure bool) {
	return read(adm, r, lim, true, true)
}

func read(adm []byte, r Reading, lim Limits, judge, secure bool) (Finding, bool) {
	a := analyses.Get().(*analysis)
	*a = analysis{lim: lim, judge: judge, secure: secure, ownBytes: lim.MaxDecodedBytes}
	a.budget = &a.ownBytes
	a.read(adm, r)
	f, insecure := a.result(), a.insecure
	*a = analysis{} // nothing of this creative stays reachable
	analyses.Put(a)
	return f, insecure
}

// analyses are the top-level analyses of Read, Judge and Insecure, reused:
// a creative read without script allocates nothing (the nested analyses of
// frames and probes are not pooled: they are rare).
var analyses = sync.Pool{New: func() any { return new(analysis) }}

// InsecureURL reports whether a URL, character references and
// percent-encoding undone, has the http scheme as the WHATWG URL parser
// reads it.
func InsecureURL(u string) bool {
	// Most URLs begin "https:" or "http:", in any case: their first bytes
	// tell, with no space or control before the scheme, no tab, CR or LF in
	// it and no '&' or '%' before its ':' for hasScheme to read past. Any
	// other URL is read the long way.
	if len(u) >= 6 && httpHead(u) {
		switch u[4] {
		case ':':
			return true
		case 's', 'S':
			if u[5] == ':' {
				return false
			}
		}
	}
	return hasScheme(u, "http:")
}

// httpHead reports whether u, of four bytes or more, begins "http" in any
// case: a byte or'ed with 0x20 is 'h' only for 'h' and 'H', and so on.
func httpHead(u string) bool {
	const http = 'h' | 't'<<8 | 't'<<16 | 'p'<<24
	return binary.LittleEndian.Uint32([]byte(u[:4]))|0x20202020 == http
}

// analysis is the state of one reading of a creative.
type analysis struct {
	lim    Limits
	judge  bool // reading for Judge
	secure bool // reading for Insecure

	found    Finding
	insecure bool
	budget   *int // decoded bytes left, shared with nested analyses
	ownBytes int  // the budget of an analysis that shares none

	// Functions declared at the top level of the creative's scripts, by
	// name, and how each name is referenced (refForced, refGesture).
	funcs map[string]*jsFunc
	refs  map[string]uint8

	// observe, when set (by tests), sees every script read: its source
	// and whether it is inline (a handler or javascript: URL body).
	observe func(src []byte, inline bool)
	// observeVAST, when set (by tests), sees every VAST element text read
	// (vastText), valid during the call only.
	observeVAST func(name, text string)
}

func newAnalysis(lim Limits, judge, secure bool) *analysis {
	a := &analysis{lim: lim, judge: judge, secure: secure, ownBytes: lim.MaxDecodedBytes}
	a.budget = &a.ownBytes
	return a
}

// sub is a fresh analysis for a separate browsing context (a javascript: or
// data: frame) sharing the limits and the decoded-bytes budget.
func (a *analysis) sub() *analysis {
	return &analysis{lim: a.lim, judge: a.judge, secure: a.secure, budget: a.budget, observe: a.observe}
}

func (a *analysis) read(adm []byte, r Reading) {
	readFully := false // a VAST or native reading read to its end
	if r&Native != 0 {
		a.readNative(adm, 0, r&HTML != 0)
		readFully = a.found&Unreadable == 0
	}
	if r&VAST != 0 {
		before := a.found & Unreadable
		a.readVAST(adm, 0, r&HTML != 0)
		readFully = readFully || a.found&Unreadable == before && before == 0
	}
	if r&HTML == 0 {
		return
	}
	if !readFully {
		a.readHTML(adm, 0)
		return
	}
	// The same bytes read as HTML too, in case something renders them so:
	// what that reading finds counts, but a script that does not parse
	// there (JSON's \" in a jstracker) is the other reading's syntax.
	probe := newAnalysis(a.lim, a.judge, a.secure)
	probe.budget, probe.observe = a.budget, a.observe
	probe.funcs, probe.refs = a.sharedFuncs()
	probe.readHTML(adm, 0)
	a.found |= probe.found &^ Unreadable
	a.insecure = a.insecure || probe.insecure
}

// sharedFuncs makes a's function table, for an analysis reading more of
// the same document to share.
func (a *analysis) sharedFuncs() (map[string]*jsFunc, map[string]uint8) {
	if a.funcs == nil {
		a.funcs, a.refs = map[string]*jsFunc{}, map[string]uint8{}
	}
	return a.funcs, a.refs
}

// spend takes n decoded bytes from the budget; false (and Unreadable) when
// it runs out.
func (a *analysis) spend(n int) bool {
	if *a.budget -= n; *a.budget < 0 {
		a.found |= Unreadable
		return false
	}
	return true
}

// enter reports whether a document at depth may be read (else Unreadable).
func (a *analysis) enter(depth int) bool {
	if depth > a.lim.MaxDepth {
		a.found |= Unreadable
		return false
	}
	return true
}

// result resolves the functions: one that navigates and can run without a
// gesture makes the creative a forced redirect.
func (a *analysis) result() Finding {
	if a.funcs != nil && a.forcedFunctionNavigates() {
		a.found |= ForcedRedirect
	}
	return a.found
}

// done reports whether reading further cannot change the verdict.
func (a *analysis) done() bool {
	return (!a.judge || a.found&(Unreadable|ForcedRedirect) != 0) && (!a.secure || a.insecure)
}
