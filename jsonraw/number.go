package jsonraw

import (
	"math"
	"strconv"
	"unsafe"
)

// Float reads the JSON number v as encoding/json reads it into a float64;
// ok is false when v is not a number or overflows float64.
func Float(v []byte) (f float64, ok bool) {
	if !numberBytes(v) {
		return 0, false
	}
	f, err := strconv.ParseFloat(unsafeString(v), 64)
	return f, err == nil
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
