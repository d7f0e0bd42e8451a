package engine

import (
	"fmt"
	"math"
	"regexp"
	"sort"
)

// Rates holds the currency rates of `currencyRates`, compiled once: each
// configured pair and its inverse. No other pair is inferred.
type Rates struct {
	pairs map[[2]string]float64
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

// CompileRates validates `BASE/QUOTE: rate` entries (rate: one BASE in QUOTE).
func CompileRates(m map[string]float64) (*Rates, error) {
	r := &Rates{pairs: make(map[[2]string]float64, 2*len(m))}
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
		if k[:3] == k[4:] {
			errs = append(errs, fmt.Errorf("currencyRates: %q converts a currency to itself", k))
			continue
		}
		if !(v > 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("currencyRates: %q must be > 0 and finite", k))
			continue
		}
		base, quote := k[:3], k[4:]
		if _, dup := r.pairs[[2]string{base, quote}]; dup {
			errs = append(errs, fmt.Errorf("currencyRates: %q is given twice (directly and as an inverse)", k))
			continue
		}
		r.pairs[[2]string{base, quote}] = v
		r.pairs[[2]string{quote, base}] = 1 / v
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return r, nil
}

// Rate returns the price of one `from` in `to`. The same currency is 1.
func (r *Rates) Rate(from, to string) (float64, bool) {
	if from == to {
		return 1, true
	}
	if r == nil {
		return 0, false
	}
	v, ok := r.pairs[[2]string{from, to}]
	return v, ok
}
