package gates

// filesystem (scanning): shell commands and file
// paths in a bid's text are an injection attempt or a leaking template.
// Each string value of the response is checked, in this order, for a
// destructive `rm` (recursive and forced), a `..` path component, and a
// sensitive path (/etc, /usr, /var, ~/.ssh, ~/.aws, ~/.gnupg,
// /home/<user>/.ssh|.aws|.gnupg) that starts a token, so that a path inside
// a URL (https://cdn.x.com/var/a.png) is not a hit. A hit inside
// seatbid[].bid[] rejects that bid (200 / 350), elsewhere the response
// (3 / 300). Each check is a linear pass over candidates found with
// bytes.Index; nothing is compiled at request time.

import (
	"bytes"

	"github.com/bidguard/bidguard/engine"
)

// filesystemOptions configures filesystem.
type filesystemOptions struct {
	// DetectRmRf flags `rm` with recursive and force flags (default true).
	DetectRmRf bool `yaml:"detectRmRf"`
	// DetectTraversal flags `..` as a whole path component (default true).
	DetectTraversal bool `yaml:"detectTraversal"`
	// DetectSensitive flags sensitive system and home paths (default true).
	DetectSensitive bool `yaml:"detectSensitive"`
	// MaxNodes is the most JSON values scanned in each bid, and outside the
	// bids (default 10000, > 0).
	MaxNodes int `yaml:"maxNodes"`
	// OnScanLimit is fail (reject a bid, or the response, not fully scanned;
	// the default) or pass.
	OnScanLimit string `yaml:"onScanLimit"`
}

// Reasons of filesystem.
const (
	reasonRmRf      = "destructive rm command detected"
	reasonTraversal = "path traversal (..) detected"
	reasonSensitive = "sensitive path detected: "
)

// sensitivePaths are matched at a token start; each must end a path
// component. The reason names the path as listed.
var sensitivePaths = []struct{ path, reason string }{
	{"/etc", reasonSensitive + "/etc"},
	{"/usr", reasonSensitive + "/usr"},
	{"/var", reasonSensitive + "/var"},
	{"~/.ssh", reasonSensitive + "~/.ssh"},
	{"~/.aws", reasonSensitive + "~/.aws"},
	{"~/.gnupg", reasonSensitive + "~/.gnupg"},
}

var homeSecrets = []struct{ dir, reason string }{
	{".ssh", reasonSensitive + "/home/<user>/.ssh"},
	{".aws", reasonSensitive + "/home/<user>/.aws"},
	{".gnupg", reasonSensitive + "/home/<user>/.gnupg"},
}

type filesystem struct {
	rm, traversal, sensitive bool
	limit                    scanLimit
}

var filesystemFactory = engine.Factory{
	Name: "filesystem", ResultName: "filesystem", Kind: engine.Scan,
	Options: func() any {
		return &filesystemOptions{DetectRmRf: true, DetectTraversal: true, DetectSensitive: true,
			MaxNodes: defaultMaxNodes, OnScanLimit: onScanLimitFail}
	},
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*filesystemOptions)
		lim, err := newScanLimit(o.MaxNodes, o.OnScanLimit)
		if err != nil {
			return nil, err
		}
		return &filesystem{rm: o.DetectRmRf, traversal: o.DetectTraversal, sensitive: o.DetectSensitive, limit: lim}, nil
	},
}

func (g *filesystem) Kind() engine.Kind { return engine.Scan }

// Scan walks the response; each string is judged by match.
func (g *filesystem) Scan(in *engine.Input, sc *engine.Scope) { g.scan(in, sc) }

func (g *filesystem) scan(_ *engine.Input, sc scanScope) {
	if !g.rm && !g.traversal && !g.sensitive {
		return
	}
	scanResponse(sc, g, g.limit)
}

// match applies the enabled checks in order: rm, traversal, sensitive.
func (g *filesystem) match(s []byte) string {
	if g.rm && hasRmRf(s) {
		return reasonRmRf
	}
	if g.traversal && hasTraversal(s) {
		return reasonTraversal
	}
	if g.sensitive {
		return findSensitive(s)
	}
	return ""
}

func isShellSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isQuote(c byte) bool { return c == '"' || c == '\'' || c == '`' }

func isASCIIWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// hasRmRf finds `rm` as a word, then whitespace, then flag tokens (short
// clusters `-rfv` or long `--force`), which together must include recursive
// (r, R, --recursive) and force (f, --force). Flags stop at the first token
// that is not one, or at `--`.
func hasRmRf(s []byte) bool {
	for off := 0; ; {
		k := bytes.Index(s[off:], []byte("rm"))
		if k < 0 {
			return false
		}
		i := off + k
		off = i + 1
		if i > 0 && isASCIIWord(s[i-1]) {
			continue
		}
		if rmFlags(s, i+2) {
			return true
		}
	}
}

// rmFlags reads the flag tokens after `rm` at s[j:].
func rmFlags(s []byte, j int) bool {
	rec, force := false, false
	for {
		if j >= len(s) || !isShellSpace(s[j]) {
			return false
		}
		for j < len(s) && isShellSpace(s[j]) {
			j++
		}
		if j+1 >= len(s) || s[j] != '-' {
			return false
		}
		if s[j+1] == '-' { // long option
			st := j + 2
			j = st
			for j < len(s) && (isASCIILetter(s[j]) || s[j] == '-') {
				j++
			}
			switch string(s[st:j]) {
			case "":
				return false // `--` ends the options
			case "recursive":
				rec = true
			case "force":
				force = true
			}
		} else {
			st := j + 1
			j = st
			for j < len(s) && isASCIILetter(s[j]) {
				switch s[j] {
				case 'r', 'R':
					rec = true
				case 'f':
					force = true
				}
				j++
			}
			if j == st {
				return false
			}
		}
		if rec && force {
			return true
		}
	}
}

func isTraversalDelim(c byte) bool { return c == '/' || c == '\\' || isShellSpace(c) || isQuote(c) }

// hasTraversal finds `..` delimited on both sides by /, \, whitespace, a
// quote or the string's ends.
func hasTraversal(s []byte) bool {
	for off := 0; ; {
		k := bytes.Index(s[off:], []byte(".."))
		if k < 0 {
			return false
		}
		i := off + k
		off = i + 1
		if (i == 0 || isTraversalDelim(s[i-1])) && (i+2 == len(s) || isTraversalDelim(s[i+2])) {
			return true
		}
	}
}

// isComponentByte reports whether c continues a path component: letters,
// digits, . _ - ~ + @ % and non-ASCII bytes. Anything else (/, \,
// whitespace, quotes, ; , : ) ? # & | < > and the like) ends it.
func isComponentByte(c byte) bool {
	if isASCIIWord(c) || c >= 0x80 {
		return true
	}
	switch c {
	case '.', '-', '~', '+', '@', '%':
		return true
	}
	return false
}

func componentEnds(s []byte, i int) bool { return i >= len(s) || !isComponentByte(s[i]) }

// tokenStart reports whether a path may start at s[i]: at the string's
// start, or after whitespace, a quote, '=', '(' or a ':' that is not part of
// "://".
func tokenStart(s []byte, i int) bool {
	if i == 0 {
		return true
	}
	switch c := s[i-1]; {
	case isShellSpace(c), isQuote(c), c == '=', c == '(':
		return true
	case c == ':':
		return !(s[i] == '/' && i+1 < len(s) && s[i+1] == '/')
	}
	return false
}

// findSensitive returns the reason for the first sensitive path in s.
func findSensitive(s []byte) string {
	slash, tilde := nextByte(s, 0, '/'), nextByte(s, 0, '~')
	for slash < len(s) || tilde < len(s) {
		i := min(slash, tilde)
		if i == slash {
			slash = nextByte(s, i+1, '/')
		} else {
			tilde = nextByte(s, i+1, '~')
		}
		if !tokenStart(s, i) {
			continue
		}
		rest := s[i:]
		for _, p := range sensitivePaths {
			if hasPrefix(rest, p.path) && componentEnds(s, i+len(p.path)) {
				return p.reason
			}
		}
		if r := homeSecret(rest); r != "" {
			return r
		}
	}
	return ""
}

// hasPrefix reports whether s begins with p (the comparison does not
// allocate).
func hasPrefix(s []byte, p string) bool { return len(s) >= len(p) && string(s[:len(p)]) == p }

// nextByte returns the index of the first c in s[from:], or len(s).
func nextByte(s []byte, from int, c byte) int {
	if k := bytes.IndexByte(s[from:], c); k >= 0 {
		return from + k
	}
	return len(s)
}

// homeSecret matches /home/<user>/.ssh|.aws|.gnupg at the start of s.
func homeSecret(s []byte) string {
	if !bytes.HasPrefix(s, []byte("/home/")) {
		return ""
	}
	j := len("/home/")
	st := j
	for j < len(s) && s[j] != '/' && s[j] != '\\' && !isShellSpace(s[j]) && !isQuote(s[j]) {
		j++
	}
	if j == st || j >= len(s) || s[j] != '/' {
		return ""
	}
	rest := s[j+1:]
	for _, h := range homeSecrets {
		if hasPrefix(rest, h.dir) && componentEnds(rest, len(h.dir)) {
			return h.reason
		}
	}
	return ""
}

var _ engine.ScanGate = (*filesystem)(nil)
