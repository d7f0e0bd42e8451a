package gates

// seatPolicy (OpenRTB 2.6 §4.2.3 Bid.adomain, crid, cat, bundle, dealid,
// adm): a seat's own deny and allow rules, typically in its seat file. Deny
// rules are checked first, in order: one hits when any value of its field
// matches, and rejects with "denied by rule <id>". Then, for each field that
// has allow rules (fields in the order of their first allow rule), every
// value must match one of that field's allow rules, and a missing or empty
// field fails unless one of them sets allowMissing: "not allowed by rule
// <id of the field's first allow rule>". Deny always wins.
//
// Values are normalised before any match: adomain entries as adomainVerify
// does (trimmed, lower-cased, IDNA to punycode, blanks ignored, one trailing
// dot dropped), bundle lower-cased, cat codes upper-cased (codes of every
// taxonomy compare without case, as in match.go), the others as
// sent. exact looks values up in sets
// built at load; suffix (adomain and bundle) matches the value or a name under
// it on a '.' boundary, one map lookup per label; regex is RE2 compiled at
// load as ^(?s:…)$, unanchored (?s:…) on adm, all values of a rule in one
// expression. Codes by field unless the rule sets them. No allocation unless
// an adomain needs IDNA or lower-casing.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unsafe"

	"github.com/bidguard/bidguard/engine"
)

// seatRuleConfig is one rule of seatPolicy's options.
type seatRuleConfig struct {
	// ID names the rule in reasons; unique within the gate.
	ID string `yaml:"id"`
	// Action is deny or allow.
	Action string `yaml:"action"`
	// Field is adomain, crid, cat, bundle, dealid or adm.
	Field string `yaml:"field"`
	// Match is exact, suffix (adomain and bundle only) or regex.
	Match string `yaml:"match"`
	// Values are what the field is matched against (at least one).
	Values []string `yaml:"values"`
	// AllowMissing lets a bid without the field pass the field's allow rules.
	AllowMissing bool `yaml:"allowMissing"`
	// Loss and NBR override the field's codes.
	Loss *int `yaml:"loss"`
	NBR  *int `yaml:"nbr"`
}

// seatPolicyOptions configures seatPolicy.
type seatPolicyOptions struct {
	// Rules are the seat's rules (at least one).
	Rules []seatRuleConfig `yaml:"rules"`
}

// seatField is a field rules apply to.
type seatField uint8

const (
	seatAdomain seatField = iota
	seatCrid
	seatCat
	seatBundle
	seatDealID
	seatAdm
)

var seatFieldNames = [...]string{"adomain", "crid", "cat", "bundle", "dealid", "adm"}

// seatFieldCodes are the codes of each field (loss, nbr).
var seatFieldCodes = [...][2]int{
	seatAdomain: {engine.LossCreativeFilteredAdvertiserExclusions, engine.NBRResponseRejectedCreativeAdvertiserBlocking},
	seatCrid:    {engine.LossCreativeFilteredGeneral, engine.NBRResponseRejectedInvalidCreative},
	seatCat:     {engine.LossCreativeFilteredCategoryExclusions, engine.NBRResponseRejectedCreativeCategoryExclusions},
	seatBundle:  {engine.LossCreativeFilteredAppBundleExclusions, engine.NBRResponseRejectedGeneral},
	seatDealID:  {engine.LossCreativeFilteredNotAllowedInPMPDeal, engine.NBRResponseRejectedGeneral},
	seatAdm:     {engine.LossCreativeFilteredGeneral, engine.NBRResponseRejectedInvalidCreative},
}

// Match kinds.
const (
	matchExact uint8 = iota
	matchSuffix
	matchRegex
)

// seatRule is a compiled rule; immutable and safe for concurrent use.
type seatRule struct {
	id        string
	field     seatField
	match     uint8
	exact     map[string]struct{} // exact: values as normalised
	suffix    domainSet
	re        *regexp.Regexp
	reason    string
	loss, nbr int
}

// seatAllowField holds a field's allow rules.
type seatAllowField struct {
	field        seatField
	rules        []*seatRule
	allowMissing bool
	reason       string // from the field's first allow rule
	loss, nbr    int
}

type seatPolicy struct {
	deny  []*seatRule
	allow []seatAllowField
}

var seatPolicyFactory = engine.Factory{
	Name: "seatPolicy", ResultName: "rtb.seat-policy", Kind: engine.PerBid,
	Options: func() any { return &seatPolicyOptions{} },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		return newSeatPolicy(opts.(*seatPolicyOptions))
	},
}

// newSeatPolicy validates the rules, reporting every error with its path,
// and compiles them.
func newSeatPolicy(o *seatPolicyOptions) (*seatPolicy, error) {
	if len(o.Rules) == 0 {
		return nil, errors.New("rules: at least one rule is required")
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	g := &seatPolicy{}
	ids := map[string]int{}
	for i := range o.Rules {
		rc := &o.Rules[i]
		at := fmt.Sprintf("rules[%d]", i)
		switch j, dup := ids[rc.ID]; {
		case rc.ID == "":
			bad("%s.id: missing", at)
		case dup:
			bad("%s.id: %q is also the id of rules[%d]", at, rc.ID, j)
		default:
			ids[rc.ID] = i
		}
		deny := rc.Action == "deny"
		if !deny && rc.Action != "allow" {
			bad("%s.action: %q is not deny or allow", at, rc.Action)
		}
		field, ok := parseSeatField(rc.Field)
		if !ok {
			bad("%s.field: %q is not one of adomain, crid, cat, bundle, dealid, adm", at, rc.Field)
		}
		r := &seatRule{id: rc.ID, field: field}
		validMatch := true
		switch rc.Match {
		case "exact":
			r.match = matchExact
		case "suffix":
			r.match = matchSuffix
			if ok && field != seatAdomain && field != seatBundle {
				bad("%s.match: suffix applies only to adomain and bundle, not %s", at, rc.Field)
			}
		case "regex":
			r.match = matchRegex
		default:
			bad("%s.match: %q is not exact, suffix or regex", at, rc.Match)
			validMatch = false
		}
		if deny && rc.AllowMissing {
			bad("%s.allowMissing: only allow rules accept a missing field", at)
		}
		r.loss, r.nbr = seatFieldCodes[field][0], seatFieldCodes[field][1]
		if rc.Loss != nil {
			if r.loss = *rc.Loss; r.loss <= 0 {
				bad("%s.loss must be > 0, got %d", at, r.loss)
			}
		}
		if rc.NBR != nil {
			if r.nbr = *rc.NBR; r.nbr <= 0 {
				bad("%s.nbr must be > 0, got %d", at, r.nbr)
			}
		}
		if len(rc.Values) == 0 {
			bad("%s.values: at least one value is required", at)
		}
		if ok && validMatch {
			if err := r.compileValues(rc.Values, at); err != nil {
				errs = append(errs, err)
			}
		}
		if deny {
			r.reason = "denied by rule " + rc.ID
			g.deny = append(g.deny, r)
			continue
		}
		g.addAllow(r, rc.AllowMissing)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return g, nil
}

func parseSeatField(s string) (seatField, bool) {
	for i, n := range seatFieldNames {
		if s == n {
			return seatField(i), true
		}
	}
	return 0, false
}

// addAllow files an allow rule under its field.
func (g *seatPolicy) addAllow(r *seatRule, allowMissing bool) {
	for i := range g.allow {
		if a := &g.allow[i]; a.field == r.field {
			a.rules = append(a.rules, r)
			a.allowMissing = a.allowMissing || allowMissing
			return
		}
	}
	g.allow = append(g.allow, seatAllowField{
		field: r.field, rules: []*seatRule{r}, allowMissing: allowMissing,
		reason: "not allowed by rule " + r.id, loss: r.loss, nbr: r.nbr,
	})
}

// compileValues builds the rule's set or expression from its values,
// normalised like the bid's.
func (r *seatRule) compileValues(values []string, at string) error {
	var errs []error
	var res []string
	var set []string
	for j, v := range values {
		vat := fmt.Sprintf("%s.values[%d]", at, j)
		if strings.TrimSpace(v) == "" {
			errs = append(errs, fmt.Errorf("%s: empty", vat))
			continue
		}
		if r.match == matchRegex {
			if _, err := regexp.Compile(r.wrap(v)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", vat, err))
				continue
			}
			res = append(res, "(?:"+v+")")
			continue
		}
		switch r.field {
		case seatAdomain:
			d, err := configDomain(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %q %w", vat, v, err))
				continue
			}
			v = d
		case seatBundle:
			v = strings.ToLower(v)
		case seatCat:
			v = strings.ToUpper(v)
		}
		set = append(set, v)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	switch r.match {
	case matchRegex:
		r.re = regexp.MustCompile(r.wrap(strings.Join(res, "|")))
	case matchSuffix:
		r.suffix = newDomainSet(set)
	default:
		r.exact = stringSet(set)
	}
	return nil
}

// wrap anchors a regular expression: ^(?s:…)$, or (?s:…)
// on adm.
func (r *seatRule) wrap(expr string) string {
	if r.field == seatAdm {
		return "(?s:" + expr + ")"
	}
	return "^(?s:" + expr + ")$"
}

func stringSet(l []string) map[string]struct{} {
	m := make(map[string]struct{}, len(l))
	for _, v := range l {
		m[v] = struct{}{}
	}
	return m
}

func (g *seatPolicy) Kind() engine.Kind { return engine.PerBid }

// Prepare never skips: every bid is judged.
func (g *seatPolicy) Prepare(*engine.Input) string { return "" }

// CheckBid applies the deny rules, then each field's allow rules.
func (g *seatPolicy) CheckBid(_ *engine.Input, b *engine.Bid) engine.Verdict {
	for _, r := range g.deny {
		it := seatValues{b: b, field: r.field}
		for v, fold, ok := it.next(); ok; v, fold, ok = it.next() {
			if r.matches(v, fold) {
				return engine.Reject(r.reason, r.loss, r.nbr)
			}
		}
	}
	for i := range g.allow {
		a := &g.allow[i]
		it := seatValues{b: b, field: a.field}
		n := 0
		for v, fold, ok := it.next(); ok; v, fold, ok = it.next() {
			n++
			if !a.allows(v, fold) {
				return engine.Reject(a.reason, a.loss, a.nbr)
			}
		}
		if n == 0 && !a.allowMissing {
			return engine.Reject(a.reason, a.loss, a.nbr)
		}
	}
	return engine.Pass()
}

func (a *seatAllowField) allows(v string, fold uint8) bool {
	for _, r := range a.rules {
		if r.matches(v, fold) {
			return true
		}
	}
	return false
}

// How a value is folded before it is matched.
const (
	foldNone  uint8 = iota
	foldUpper       // cat
	foldLower       // bundle
)

// maxFoldedValue is the longest value folded on the stack; longer ones are
// folded with an allocation.
const maxFoldedValue = 256

// matches reports whether the rule matches a value, folded as fold says.
// Folding is done on the stack for set lookups and allocates only for a
// regular expression given a value that needs it.
func (r *seatRule) matches(v string, fold uint8) bool {
	if r.match == matchRegex {
		return r.re.MatchString(foldString(v, fold))
	}
	// w must not flow where v does (the expression above): buf stays on
	// the stack.
	var buf [maxFoldedValue]byte
	w := v
	if fold != foldNone && needsFold(v, fold) {
		if len(v) > len(buf) {
			w = foldString(v, fold)
		} else {
			n := copy(buf[:], v)
			foldBytes(buf[:n], fold)
			w = unsafe.String(&buf[0], n)
		}
	}
	if r.match == matchSuffix {
		_, ok := r.suffix.match(w)
		return ok
	}
	_, ok := r.exact[w]
	return ok
}

// needsFold reports whether v holds a letter fold changes.
func needsFold(v string, fold uint8) bool {
	lo, hi := byte('a'), byte('z')
	if fold == foldLower {
		lo, hi = 'A', 'Z'
	}
	for i := 0; i < len(v); i++ {
		if v[i] >= lo && v[i] <= hi {
			return true
		}
	}
	return false
}

func foldBytes(b []byte, fold uint8) {
	for i, c := range b {
		if fold == foldUpper {
			b[i] = upperASCII(c)
		} else {
			b[i] = markupLower(c)
		}
	}
}

// foldString folds v, allocating only when it changes.
func foldString(v string, fold uint8) string {
	if fold == foldNone || !needsFold(v, fold) {
		return v
	}
	b := []byte(v)
	foldBytes(b, fold)
	return string(b)
}

// seatValues iterates over a field's values with the fold they need.
type seatValues struct {
	b     *engine.Bid
	field seatField
	i     int
}

func (it *seatValues) next() (v string, fold uint8, ok bool) {
	b := it.b
	switch it.field {
	case seatAdomain:
		for it.i < len(b.ADomain) {
			raw := b.ADomain[it.i]
			it.i++
			if strings.TrimSpace(raw) == "" {
				continue
			}
			d, _ := normalizeDomain(raw)
			return trimDot(d), foldNone, true
		}
		return "", foldNone, false
	case seatCat:
		for it.i < len(b.Cat) {
			c := b.Cat[it.i]
			it.i++
			if c == "" {
				continue
			}
			return c, foldUpper, true
		}
		return "", foldNone, false
	}
	if it.i > 0 {
		return "", foldNone, false
	}
	it.i = 1
	switch it.field {
	case seatCrid:
		v = b.CrID
	case seatBundle:
		v, fold = b.Bundle, foldLower
	case seatDealID:
		v = b.DealID
	case seatAdm:
		v = b.AdM
	}
	return v, fold, v != ""
}

var _ engine.BidGate = (*seatPolicy)(nil)
