package engine

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
)

// Rates holds the currency rates of `currencyRates`, compiled once: each
// configured pair and its inverse. No other pair is inferred. Currency codes
// compare ASCII-case-insensitively (`usd` is `USD`), in the keys and in the
// codes a bid or request carries. A Rates is immutable and safe for
// concurrent use; Convert allocates nothing.
type Rates struct {
	pairs map[ratePair]pairRate
}

// ratePair is BASE then QUOTE, upper-cased: a fixed-size key, so a lookup
// from request strings folds on the stack.
type ratePair [6]byte

// pairRate is one direction of a configured rate: an amount in BASE is
// worth amount*rate in QUOTE, or amount/rate for the derived inverse (a
// division keeps the configured number exact: 1 USD is 1/1.08 EUR).
type pairRate struct {
	rate    float64
	inverse bool
}

var currencyCode = regexp.MustCompile(`^[A-Za-z]{3}$`)

// CompileRates validates `BASE/QUOTE: rate` entries (rate: one BASE in QUOTE).
// Codes are three ASCII letters in any case.
func CompileRates(m map[string]float64) (*Rates, error) {
	r := &Rates{pairs: make(map[ratePair]pairRate, 2*len(m))}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		v := m[k]
		if len(k) != 7 || k[3] != '/' || !currencyCode.MatchString(k[:3]) || !currencyCode.MatchString(k[4:]) {
			errs = append(errs, fmt.Errorf("currencyRates: %q is not BASE/QUOTE with ISO-4217 codes", k))
			continue
		}
		base, quote := strings.ToUpper(k[:3]), strings.ToUpper(k[4:])
		if base == quote {
			errs = append(errs, fmt.Errorf("currencyRates: %q converts a currency to itself", k))
			continue
		}
		if !(v > 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("currencyRates: %q must be > 0 and finite", k))
			continue
		}
		fwd, _ := pairKey(base, quote)
		inv, _ := pairKey(quote, base)
		if _, dup := r.pairs[fwd]; dup {
			errs = append(errs, fmt.Errorf("currencyRates: %q is given twice (in another case or as an inverse)", k))
			continue
		}
		r.pairs[fwd] = pairRate{rate: v}
		r.pairs[inv] = pairRate{rate: v, inverse: true}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// pairKey folds two three-letter codes into a key; ok is false for codes of
// another length, which no configured pair can match.
func pairKey(from, to string) (k ratePair, ok bool) {
	if len(from) != 3 || len(to) != 3 {
		return k, false
	}
	copy(k[:3], from)
	copy(k[3:], to)
	for i, c := range k {
		if 'a' <= c && c <= 'z' {
			k[i] = c - ('a' - 'A')
		}
	}
	return k, true
}

// SameCurrency reports whether two currency codes are equal ignoring ASCII
// case.
func SameCurrency(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'a' <= x && x <= 'z' {
			x -= 'a' - 'A'
		}
		if 'a' <= y && y <= 'z' {
			y -= 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// Convert expresses amount, in from, in to, unrounded, and reports whether
// a rate exists. The same currency (ignoring case) needs no rate; a nil
// Rates converts nothing else.
func (r *Rates) Convert(amount float64, from, to string) (float64, bool) {
	if SameCurrency(from, to) {
		return amount, true
	}
	if r == nil {
		return 0, false
	}
	k, ok := pairKey(from, to)
	if !ok {
		return 0, false
	}
	p, ok := r.pairs[k]
	if !ok {
		return 0, false
	}
	if p.inverse {
		return amount / p.rate, true
	}
	return amount * p.rate, true
}
