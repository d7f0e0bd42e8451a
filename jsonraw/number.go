package jsonraw

import (
	"math"
	"strconv"
	"unsafe"
)

// Float reads the JSON number v as encoding/json reads it into a float64;
// ok is false when v is not a number or overflows float64.
func Float(v []byte) (f float64, ok bool) {
	if f, ok := plainDecimal(v); ok {
		return f, true
	}
	if !numberBytes(v) {
		return 0, false
	}
	f, err := strconv.ParseFloat(unsafeString(v), 64)
	return f, err == nil
}

// exactPow10 holds the powers of ten a float64 holds exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// plainDecimal reads the usual number, digits with an optional sign and
// fraction and at most 15 of them, as strconv.ParseFloat's exact path does:
// the digits as an integer (below 2^53, so exact) divided by a power of ten
// held exactly, one correctly rounded division. ok is false for any other
// form, which Float leaves to strconv.
func plainDecimal(v []byte) (f float64, ok bool) {
	i, neg := 0, false
	if len(v) > 0 && v[0] == '-' {
		i, neg = 1, true
	}
	if len(v)-i > 16 || i >= len(v) || v[i] < '0' || v[i] > '9' {
		return 0, false
	}
	var m uint64
	frac, digits := -1, 0 // frac: the digits after the point, -1 before it
	for ; i < len(v); i++ {
		switch c := v[i]; {
		case '0' <= c && c <= '9':
			m = m*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			frac = 0
		default:
			return 0, false
		}
	}
	if digits > 15 || frac == 0 {
		return 0, false
	}
	f = float64(m)
	if frac > 0 {
		f /= exactPow10[frac]
	}
	if neg {
		f = -f
	}
	return f, true
}

// Int reads a JSON number with an integral value (2, -1, 2.0, 2e0): numbers
// are compared as values (docs/gates.md, "Matching values"). ok is false for
// anything else, including values beyond ±2^53.
func Int(v []byte) (int64, bool) {
	i, neg := 0, false
	if len(v) > 0 && v[0] == '-' {
		i, neg = 1, true
	}
	if i < len(v) && len(v)-i <= 15 {
		var n int64
		j := i
		for j < len(v) && '0' <= v[j] && v[j] <= '9' {
			n = n*10 + int64(v[j]-'0')
			j++
		}
		if j == len(v) && j > i {
			if neg {
				n = -n
			}
			return n, true
		}
	}
	f, ok := Float(v)
	if !ok || f != math.Trunc(f) || f > 1<<53 || f < -(1<<53) {
		return 0, false
	}
	return int64(f), true
}

// AppendFloat appends f as encoding/json writes a float64: the shortest
// decimal that reads back as f, in exponent form below 1e-6 and from 1e21
// (with a one-digit exponent written without padding). f must be finite.
func AppendFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// numberBytes reports whether v starts like a JSON number and holds only
// bytes a JSON number may hold, so that strconv reads no Go-only forms
// (hexadecimal, underscores, Inf, NaN).
func numberBytes(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	first := v[0]
	if first == '-' && len(v) > 1 {
		first = v[1]
	}
	if first < '0' || first > '9' {
		return false
	}
	for _, c := range v {
		if !isNumberByte[c] {
			return false
		}
	}
	return true
}

var isNumberByte = [256]bool{'0': true, '1': true, '2': true, '3': true, '4': true, '5': true, '6': true,
	'7': true, '8': true, '9': true, '.': true, 'e': true, 'E': true, '+': true, '-': true}

// unsafeString views b as a string for a call that does not retain it
// (strconv clones the input into its errors).
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
