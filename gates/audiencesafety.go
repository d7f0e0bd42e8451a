package gates

// audienceSafety (OpenRTB 2.6 §3.2.3 Regs.coppa, §3.2.13/§3.2.14 Site.cat and
// App.cat, §3.2.16 Content.cat, §4.2.3 Bid.cat, Bid.cattax and Bid.attr;
// AdCOM 1.0 "Creative Attributes"): on child-directed inventory, a bid must
// not carry an unsafe category, a category of a taxonomy bidguard has no
// unsafe set for, or the attributes 8 (pop) and 9 (provocative or
// suggestive imagery).
//
// Inventory is child-directed when regs.coppa is 1 (regs.ext.coppa 1 is an
// alias), when site.cat, app.cat, site.content.cat or app.content.cat holds a
// code of childCategories (Content 1.0 codes under the C- rule when that
// object's cattax is 1 or absent, exact IDs otherwise), or when app.bundle
// contains one of bundleKeywords as a case-insensitive substring. IAB13
// (Personal Finance in Content 1.0) is not child-directed, whatever its
// closeness to IAB-7 in later taxonomies.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/jsonraw"
	"github.com/prebid/openrtb/v20/openrtb2"
)

// audienceSafetyOptions configures audienceSafety.
type audienceSafetyOptions struct {
	// ChildCategories are site, app and content categories that make inventory
	// child-directed (default none).
	ChildCategories []string `yaml:"childCategories"`
	// BundleKeywords make an app child-directed when its bundle contains one,
	// case-insensitively, as a substring (default kids, child, children,
	// toddler, preschool, baby). An empty list turns the rule off.
	BundleKeywords []string `yaml:"bundleKeywords"`
	// UnsafeCategories maps a taxonomy number to its unsafe codes, replacing
	// the default set of each taxonomy it names (taxonomy 8 entries may be
	// ranges "lo-hi"). A taxonomy listed with no codes is known and has
	// nothing unsafe.
	UnsafeCategories map[string][]string `yaml:"unsafeCategories"`
	// UnknownTaxonomy is what a bid with categories in a taxonomy that has no
	// unsafe set gets: reject (default) or pass.
	UnknownTaxonomy string `yaml:"unknownTaxonomy"`
}

// defaultContent3Unsafe is the unsafe set shared by Content 2.2, 3.0 and 3.1.
var defaultContent3Unsafe = []string{"v9i3On", "Rm3SiT", "avbNf2", "XtODT3", "I4GWl6", "mm3UXx",
	"HxqYV1", "j9PaO9", "pg0WhF", "6i4dB6", "8FD8nI", "Z7rJBM"}

// defaultUnsafeCategories returns the default unsafe set of each taxonomy.
func defaultUnsafeCategories() map[string][]string {
	return map[string][]string{
		strconv.Itoa(taxContent10): {"IAB7-39", "IAB7-42", "IAB8-5", "IAB8-18", "IAB9-9", "IAB14-1", "IAB25", "IAB26"},
		strconv.Itoa(taxAdProduct20): {"1001", "1002-1007", "1049-1057", "1259-1261", "1361-1367",
			"1519-1523", "1544-1550", "1576-1582"},
		strconv.Itoa(taxContent22): defaultContent3Unsafe,
		strconv.Itoa(taxContent30): defaultContent3Unsafe,
		strconv.Itoa(taxContent31): defaultContent3Unsafe,
	}
}

func defaultAudienceSafetyOptions() *audienceSafetyOptions {
	return &audienceSafetyOptions{
		BundleKeywords:  []string{"kids", "child", "children", "toddler", "preschool", "baby"},
		UnknownTaxonomy: "reject",
	}
}

func (o *audienceSafetyOptions) validate() error {
	var errs []error
	if o.UnknownTaxonomy != "reject" && o.UnknownTaxonomy != "pass" {
		errs = append(errs, fmt.Errorf("unknownTaxonomy must be reject or pass, not %q", o.UnknownTaxonomy))
	}
	for i, k := range o.BundleKeywords {
		if strings.TrimSpace(k) == "" {
			errs = append(errs, fmt.Errorf("bundleKeywords[%d] is empty", i))
		}
	}
	return errors.Join(errs...)
}

type audienceSafety struct {
	childContent10 *catSet  // childCategories under the C- rule (cattax 1)
	childExact     *catSet  // childCategories as exact IDs (other taxonomies)
	keywords       []string // lower-cased
	unsafe         taxonomySets
	passUnknown    bool
}

var audienceSafetyFactory = engine.Factory{
	Name: "audienceSafety", ResultName: "rtb.audience-safety", Kind: engine.PerBid,
	Options: func() any { return defaultAudienceSafetyOptions() },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*audienceSafetyOptions)
		return newAudienceSafety(o)
	},
}

func newAudienceSafety(o *audienceSafetyOptions) (*audienceSafety, error) {
	errs := []error{o.validate()}
	g := &audienceSafety{passUnknown: o.UnknownTaxonomy == "pass"}
	var err error
	if g.childContent10, err = newCatSet("childCategories", taxContent10, o.ChildCategories); err != nil {
		errs = append(errs, err)
	}
	g.childExact, _ = newCatSet("childCategories", 0, o.ChildCategories)
	for _, k := range o.BundleKeywords {
		if k = strings.ToLower(strings.TrimSpace(k)); k != "" {
			g.keywords = append(g.keywords, k)
		}
	}
	if g.unsafe, err = compileTaxonomySets("unsafeCategories", defaultUnsafeCategories()); err != nil {
		errs = append(errs, err) // a bad built-in default: caught by the tests
	}
	user, err := compileTaxonomySets("unsafeCategories", o.UnsafeCategories)
	if err != nil {
		errs = append(errs, err)
	}
	for tax, set := range user {
		g.unsafe[tax] = set
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *audienceSafety) Kind() engine.Kind { return engine.PerBid }

// Prepare skips inventory that is not child-directed.
func (g *audienceSafety) Prepare(in *engine.Input) string {
	if g.childDirected(in.Request) {
		return ""
	}
	return "inventory not child-directed"
}

func (g *audienceSafety) childDirected(r *openrtb2.BidRequest) bool {
	if r == nil {
		return false
	}
	if reg := r.Regs; reg != nil && (reg.COPPA == 1 || regsExtCOPPA(reg.Ext)) {
		return true
	}
	if s := r.Site; s != nil {
		if g.childCat(catTaxOf(s.CatTax), s.Cat) {
			return true
		}
		if c := s.Content; c != nil && g.childCat(catTaxOf(c.CatTax), c.Cat) {
			return true
		}
	}
	if a := r.App; a != nil {
		if g.childCat(catTaxOf(a.CatTax), a.Cat) {
			return true
		}
		if c := a.Content; c != nil && g.childCat(catTaxOf(c.CatTax), c.Cat) {
			return true
		}
		for _, k := range g.keywords {
			if containsFoldASCII(a.Bundle, k) {
				return true
			}
		}
	}
	return false
}

func (g *audienceSafety) childCat(tax int64, cats []string) bool {
	set := g.childExact
	if tax == taxContent10 {
		set = g.childContent10
	}
	for _, c := range cats {
		if set.has(c) {
			return true
		}
	}
	return false
}

// CheckBid applies, in order, the unknown-taxonomy, unsafe-category and
// unsafe-attribute checks.
func (g *audienceSafety) CheckBid(_ *engine.Input, b *engine.Bid) engine.Verdict {
	if hasCategory(b.Cat) {
		tax := catTaxOf(b.CatTax)
		set, known := g.unsafe[tax]
		if !known && !g.passUnknown {
			return engine.Reject("child-directed inventory: unknown category taxonomy "+strconv.FormatInt(tax, 10), engine.LossCreativeFilteredCategoryExclusions, engine.NBRResponseRejectedCreativeCategoryExclusions)
		}
		for _, c := range b.Cat {
			if set.has(c) {
				return engine.Reject("child-directed inventory served unsafe category: "+quote(c), engine.LossCreativeFilteredCategoryExclusions, engine.NBRResponseRejectedCreativeCategoryExclusions)
			}
		}
	}
	for _, a := range b.Attr {
		if a == 8 || a == 9 {
			return engine.Reject("child-directed inventory served unsafe attribute: "+strconv.FormatInt(int64(a), 10), engine.LossCreativeFilteredCreativeAttributeExclusions, engine.NBRResponseRejectedInvalidCreative)
		}
	}
	return engine.Pass()
}

var _ engine.BidGate = (*audienceSafety)(nil)

// regsExtCOPPA reports whether regs.ext.coppa is the number 1 (the alias
// some exchanges send), compared as a value: 1, 1.0 and 1e0 are 1.
func regsExtCOPPA(ext []byte) bool {
	v, ok := jsonraw.Lookup(ext, "coppa")
	if !ok {
		return false
	}
	n, isInt := jsonraw.Int(v)
	return isInt && n == 1
}
