package gates

// Category sets per taxonomy (OpenRTB 2.6 cattax; AdCOM 1.0 "Category
// Taxonomies"), compiled once when a config loads and read concurrently by
// every request. Membership tests allocate nothing.
//
// Codes of every taxonomy compare ASCII-case-insensitively (iab25-3 is
// IAB25-3, v9i3on is v9i3On): a block list errs on the side of blocking.
// Taxonomy 1 (Content 1.0) codes have structure: a code C covers itself
// and every code starting with "C-" (IAB25 covers IAB25-3; IAB2 does not
// cover IAB25). Taxonomy 8 (Ad Product 2.0) IDs are numbers, kept as sorted
// ranges; its option lists may write a range as "lo-hi". Every other
// taxonomy (Content 2.2, 3.0, 3.1, vendor taxonomies) is a flat set of IDs.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/prebid/openrtb/v20/adcom1"
)

// Category taxonomies bidguard knows by structure.
const (
	taxContent10   = 1 // IAB Content Category Taxonomy 1.0
	taxContent22   = 6 // IAB Content Taxonomy 2.2
	taxContent30   = 7 // IAB Content Taxonomy 3.0
	taxAdProduct20 = 8 // IAB Ad Product Taxonomy 2.0
	taxContent31   = 9 // IAB Content Taxonomy 3.1
)

// catTaxOf is cattax with its default: absent (0) means 1, Content 1.0,
// in OpenRTB 2.5 and 2.6 alike.
func catTaxOf(t adcom1.CategoryTaxonomy) int64 {
	if t == 0 {
		return taxContent10
	}
	return int64(t)
}

// idRange is an inclusive range of numeric IDs.
type idRange struct{ lo, hi uint32 }

// catSet is a compiled, immutable set of the category codes of one taxonomy.
// It is safe for concurrent use; has allocates nothing.
type catSet struct {
	content10 bool                // Content 1.0: the C- rule applies
	ids       map[string]struct{} // codes, upper-cased
	ranges    []idRange           // Ad Product 2.0: sorted, merged, disjoint
}

// newCatSet compiles codes of taxonomy tax. Codes are trimmed; an empty code
// or one longer than maxCatFold bytes is an error, and so is, in taxonomy 8,
// an entry that is neither a number nor a range "lo-hi" with lo <= hi. Errors start with option, the option
// path of the list ("unsafeCategories[8]").
func newCatSet(option string, tax int64, codes []string) (*catSet, error) {
	s := &catSet{content10: tax == taxContent10, ids: make(map[string]struct{}, len(codes))}
	var errs []error
	for i, c := range codes {
		c = strings.TrimSpace(c)
		if c == "" {
			errs = append(errs, fmt.Errorf("%s[%d] is empty", option, i))
			continue
		}
		switch {
		case len(c) > maxCatFold:
			errs = append(errs, fmt.Errorf("%s[%d] is longer than %d bytes", option, i, maxCatFold))
		case tax == taxAdProduct20:
			r, ok := parseIDRange(c)
			if !ok {
				errs = append(errs, fmt.Errorf("%s[%d]: %q is not an Ad Product 2.0 id (a number, or a range lo-hi)", option, i, c))
				continue
			}
			s.ranges = append(s.ranges, r)
		default:
			s.ids[strings.ToUpper(c)] = struct{}{}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.ranges = mergeIDRanges(s.ranges)
	return s, nil
}

// parseIDRange reads "n" or "lo-hi" (canonical decimals, lo <= hi).
func parseIDRange(c string) (idRange, bool) {
	lo, hi, isRange := strings.Cut(c, "-")
	a, ok := parseCatID(lo)
	if !ok {
		return idRange{}, false
	}
	if !isRange {
		return idRange{a, a}, true
	}
	b, ok := parseCatID(hi)
	if !ok || b < a {
		return idRange{}, false
	}
	return idRange{a, b}, true
}

// parseCatID reads a canonical decimal ID: digits only, no sign, no leading
// zero (except "0"), at most 9 digits. "01001" is not the ID 1001.
func parseCatID(s string) (uint32, bool) {
	if s == "" || len(s) > 9 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	var n uint32
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint32(c-'0')
	}
	return n, true
}

func mergeIDRanges(rs []idRange) []idRange {
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b idRange) int { return cmp.Compare(a.lo, b.lo) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if uint64(r.lo) <= uint64(last.hi)+1 {
			last.hi = max(last.hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}

// maxCatFold is the longest code a set may hold (config validation
// enforces it), so a bid's code is folded on the stack.
const maxCatFold = 64

// has reports whether cat is in the set, ignoring ASCII case (Content 1.0:
// covered by a code of the set). It allocates nothing.
func (s *catSet) has(cat string) bool {
	if s == nil || cat == "" {
		return false
	}
	if len(s.ranges) > 0 {
		if id, ok := parseCatID(cat); ok {
			return s.hasID(id)
		}
	}
	// Only the first maxCatFold+1 bytes matter: a longer code can match
	// only through a Content 1.0 prefix of at most maxCatFold bytes before
	// a '-'.
	var buf [maxCatFold + 1]byte
	n := copy(buf[:], cat)
	c := buf[:n]
	for i := range c {
		c[i] = upperASCII(c[i])
	}
	if len(cat) <= maxCatFold {
		if _, ok := s.ids[string(c)]; ok {
			return true
		}
	}
	if !s.content10 {
		return false
	}
	for i := n - 1; i > 0; i-- {
		if c[i] != '-' {
			continue
		}
		if _, ok := s.ids[string(c[:i])]; ok {
			return true
		}
	}
	return false
}

func (s *catSet) hasID(id uint32) bool {
	lo, hi := 0, len(s.ranges)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch r := s.ranges[m]; {
		case id < r.lo:
			hi = m
		case id > r.hi:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

// content10Covers reports whether the Content 1.0 code covers cat under the
// C- rule, ASCII-case-insensitively: for lists that arrive with the request
// (bcat), which are not compiled. It allocates nothing.
func content10Covers(code, cat string) bool {
	if code == "" || len(cat) < len(code) {
		return false
	}
	if !equalFoldASCII(cat[:len(code)], code) {
		return false
	}
	return len(cat) == len(code) || cat[len(code)] == '-'
}

// sameCategory reports whether a request-supplied code matches cat in
// taxonomy tax, ignoring ASCII case: Content 1.0 codes under the C- rule
// when hierarchical, other taxonomies' IDs whole.
func sameCategory(tax int64, code, cat string, hierarchical bool) bool {
	if tax == taxContent10 && hierarchical {
		return content10Covers(code, cat)
	}
	return code != "" && equalFoldASCII(code, cat)
}

// hasCategory reports whether cats holds a non-empty code.
func hasCategory(cats []string) bool {
	for _, c := range cats {
		if c != "" {
			return true
		}
	}
	return false
}

// taxonomySets maps a taxonomy number to its compiled set. A taxonomy that is
// absent is unknown; one present with an empty set is known and holds nothing.
type taxonomySets map[int64]*catSet

// compileTaxonomySets compiles per-taxonomy code lists keyed by the taxonomy
// number as written in config ("1", "8"). Errors name the option.
func compileTaxonomySets(option string, m map[string][]string) (taxonomySets, error) {
	out := make(taxonomySets, len(m))
	seen := make(map[int64]string, len(m))
	var errs []error
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		tax, err := strconv.ParseInt(strings.TrimSpace(k), 10, 64)
		if err != nil || tax <= 0 {
			errs = append(errs, fmt.Errorf("%s: taxonomy %q must be a positive number", option, k))
			continue
		}
		if prev, dup := seen[tax]; dup {
			errs = append(errs, fmt.Errorf("%s: taxonomy %q and %q are both %d", option, prev, k, tax))
			continue
		}
		seen[tax] = k
		s, err := newCatSet(fmt.Sprintf("%s[%d]", option, tax), tax, m[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[tax] = s
	}
	return out, errors.Join(errs...)
}
