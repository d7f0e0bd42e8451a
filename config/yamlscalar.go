package config

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The scalars readFast reads: on one line, plain or quoted.

// scalar reads a scalar on one line, quoted or plain (in a flow
// collection: flow).
func (r *fastReader) scalar(flow bool) *yaml.Node {
	switch r.s[r.i] {
	case '\'':
		return r.singleQuoted()
	case '"':
		return r.doubleQuoted()
	}
	return r.plain(flow)
}

// plain reads a plain scalar that resolves to a string, a decimal integer,
// a boolean or null.
func (r *fastReader) plain(flow bool) *yaml.Node {
	from := r.i
	if c := r.s[from]; !plainFirst(c) && !(c == '-' && from+1 < len(r.s) && r.s[from+1] >= '0' && r.s[from+1] <= '9') {
		return nil
	}
	end := from
scan:
	for j := from; ; j++ {
		if r.eol(j) {
			break
		}
		switch c := r.s[j]; c {
		case ':':
			if r.eol(j+1) || r.s[j+1] == ' ' {
				break scan
			}
			if flow {
				return nil // a colon in a flow scalar: yaml.v3 reads some its own way
			}
		case '#':
			if r.s[j-1] == ' ' {
				break scan
			}
		case ',', '?', '[', ']', '{', '}':
			if flow {
				break scan
			}
		}
		if r.s[j] != ' ' {
			end = j + 1
		}
	}
	v := r.s[from:end]
	tag := resolvePlain(v)
	if tag == "" {
		return nil
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v, Line: r.line, Column: r.col(from)}
	r.i = end
	return n
}

// plainFirst reports whether a plain scalar may start with c (a dash
// followed by a digit aside).
func plainFirst(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c >= 0x80:
		return true
	}
	return strings.IndexByte("_./$~(=^<+;", c) >= 0
}

// resolvePlain returns the tag yaml.v3 resolves the plain scalar v to, or
// "" when it is not one readFast knows to resolve as yaml.v3 does.
func resolvePlain(v string) string {
	switch v {
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return "!!bool"
	case "~", "null", "Null", "NULL":
		return "!!null"
	case "<<", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF":
		return ""
	}
	switch c := v[0]; {
	case c == '.':
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return ""
		}
		return "!!str"
	case c == '+' || c == '-' || (c >= '0' && c <= '9'):
		if decimalInt(v) {
			return "!!int"
		}
		// yaml.v3 tries an integer in any base, a float and a timestamp,
		// which need only these characters: without them, a string.
		for i := 0; i < len(v); i++ {
			if strings.IndexByte("0123456789abcdefABCDEFxXoO_+-.:tTzZ ", v[i]) < 0 {
				return "!!str"
			}
		}
		return ""
	}
	return "!!str"
}

// decimalInt reports whether v is a decimal integer that fits in 63 bits,
// without a plus sign or leading zeros.
func decimalInt(v string) bool {
	d := strings.TrimPrefix(v, "-")
	if d == "" || len(d) > 18 || (d[0] == '0' && len(d) > 1) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

// singleQuoted reads a single-quoted scalar on one line.
func (r *fastReader) singleQuoted() *yaml.Node {
	from := r.i
	var b []byte // the value, when it holds an escaped quote
	last := from + 1
	for j := from + 1; ; j++ {
		if r.eol(j) {
			return nil
		}
		if r.s[j] != '\'' {
			continue
		}
		if j+1 < len(r.s) && r.s[j+1] == '\'' {
			b = append(append(b, r.s[last:j]...), '\'')
			last = j + 2
			j++
			continue
		}
		v := r.s[last:j]
		if b != nil {
			v = string(append(b, v...))
		}
		r.i = j + 1
		return &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.SingleQuotedStyle, Tag: "!!str", Value: v, Line: r.line, Column: r.col(from)}
	}
}

// doubleQuoted reads a double-quoted scalar on one line, with the escapes
// that stand for one ASCII character.
func (r *fastReader) doubleQuoted() *yaml.Node {
	from := r.i
	var b []byte // the value, when it holds an escape
	last := from + 1
	for j := from + 1; ; j++ {
		if r.eol(j) {
			return nil
		}
		switch r.s[j] {
		case '"':
			v := r.s[last:j]
			if b != nil {
				v = string(append(b, v...))
			}
			r.i = j + 1
			return &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Tag: "!!str", Value: v, Line: r.line, Column: r.col(from)}
		case '\\':
			if r.eol(j + 1) {
				return nil
			}
			e := strings.IndexByte(`\"' 0abtnvfre`, r.s[j+1])
			if e < 0 {
				return nil
			}
			b = append(append(b, r.s[last:j]...), "\\\"' \x00\a\b\t\n\v\f\r\x1b"[e])
			last = j + 2
			j++
		}
	}
}
