package gates

// markupSafety (OpenRTB 2.6 §4.2.3 Bid.adm): the exchange renders adm in
// front of people, so markup that hijacks the page or hides what it runs is
// malvertising. The gate judges what the creative does when rendered, read
// by gates/markup the way the browser or player reads it, routed by what
// will render it (admReading). Rejected, in this order: adm over
// maxAdmBytes; invalid UTF-8 in the bid's raw bytes (recorded by the
// decoder); markup the readers cannot read to its end or that nests past
// maxDepth or decodes past maxDecodedBytes (unreadable); a navigation that
// runs without a user gesture (forced redirect); a javascript: or data: URL
// that runs without a gesture and navigates or decodes-and-runs (javascript
// url); code or markup built at run time from a decoder handed to eval and
// its kin (decode-and-run); a hit of an extraPatterns regular expression.

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates/markup"
)

// markupSafetyOptions configures markupSafety.
type markupSafetyOptions struct {
	// MaxAdmBytes is the largest adm accepted, in bytes (default 1 MiB).
	MaxAdmBytes int `yaml:"maxAdmBytes"`
	// MaxDepth is how deep nested documents are read (srcdoc, script
	// written or eval'd code, javascript: and data: URLs, HTMLResource,
	// jstracker, vasttag: each a level; default 8, at most 64). Deeper is
	// unreadable.
	MaxDepth int `yaml:"maxDepth"`
	// MaxDecodedBytes bounds what decoding and nesting may produce from
	// one adm (default 4 MiB). More is unreadable.
	MaxDecodedBytes int `yaml:"maxDecodedBytes"`
	// ExtraPatterns are RE2 regular expressions; a match anywhere in adm
	// rejects the bid with "pattern <index>".
	ExtraPatterns []string `yaml:"extraPatterns"`
}

const defaultMaxAdmBytes = 1 << 20

func (o *markupSafetyOptions) validate() ([]*regexp.Regexp, error) {
	var errs []error
	if o.MaxAdmBytes <= 0 {
		errs = append(errs, fmt.Errorf("maxAdmBytes must be > 0, got %d", o.MaxAdmBytes))
	}
	if err := o.limits().Validate(); err != nil {
		errs = append(errs, err)
	}
	res := make([]*regexp.Regexp, 0, len(o.ExtraPatterns))
	for i, p := range o.ExtraPatterns {
		if p == "" {
			errs = append(errs, fmt.Errorf("extraPatterns[%d] is empty", i))
			continue
		}
		re, err := regexp.Compile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("extraPatterns[%d]: %w", i, err))
			continue
		}
		res = append(res, re)
	}
	return res, errors.Join(errs...)
}

func (o *markupSafetyOptions) limits() markup.Limits {
	return markup.Limits{MaxDepth: o.MaxDepth, MaxDecodedBytes: o.MaxDecodedBytes}
}

type markupSafety struct {
	maxAdm   int
	limits   markup.Limits
	patterns []*regexp.Regexp
	reasons  []string // "unsafe markup: pattern <i>"
}

var markupSafetyFactory = engine.Factory{
	Name: "markupSafety", ResultName: "rtb.markup-safety", Kind: engine.PerBid,
	Options: func() any {
		return &markupSafetyOptions{MaxAdmBytes: defaultMaxAdmBytes, MaxDepth: markup.DefaultLimits.MaxDepth,
			MaxDecodedBytes: markup.DefaultLimits.MaxDecodedBytes}
	},
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*markupSafetyOptions)
		res, err := o.validate()
		if err != nil {
			return nil, err
		}
		g := &markupSafety{maxAdm: o.MaxAdmBytes, limits: o.limits(), patterns: res}
		for i := range res {
			g.reasons = append(g.reasons, reasonUnsafeMarkup+"pattern "+strconv.Itoa(i))
		}
		return g, nil
	},
}

// Reasons and codes (200 / 354).
const (
	markupSafetyLoss     = engine.LossCreativeFilteredGeneral
	markupSafetyNBR      = engine.NBRResponseRejectedCreativeMalware
	reasonUnsafeMarkup   = "unsafe markup: "
	reasonAdmTooLarge    = reasonUnsafeMarkup + "too large"
	reasonAdmBadUTF8     = reasonUnsafeMarkup + "invalid utf-8"
	reasonUnreadable     = reasonUnsafeMarkup + "unreadable"
	reasonForcedRedirect = reasonUnsafeMarkup + "forced redirect"
	reasonJavascriptURL  = reasonUnsafeMarkup + "javascript url"
	reasonDecodeAndRun   = reasonUnsafeMarkup + "decode-and-run"
)

func (g *markupSafety) Kind() engine.Kind { return engine.PerBid }

// Prepare never skips: every bid is judged.
func (g *markupSafety) Prepare(*engine.Input) string { return "" }

// CheckBid applies the checks in order and reports the first that fails.
func (g *markupSafety) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	adm := b.AdM
	switch {
	case len(adm) > g.maxAdm:
		return markupSafetyReject(reasonAdmTooLarge)
	case b.BadUTF8:
		return markupSafetyReject(reasonAdmBadUTF8)
	case adm == "":
		return engine.Pass()
	}
	raw := markupBytes(adm)
	f := readMarkup(&b.Memo, raw, admReading(in, b), g.limits).finding
	switch {
	case f&markup.Unreadable != 0:
		return markupSafetyReject(reasonUnreadable)
	case f&markup.ForcedRedirect != 0:
		return markupSafetyReject(reasonForcedRedirect)
	case f&markup.JavascriptURL != 0:
		return markupSafetyReject(reasonJavascriptURL)
	case f&markup.DecodeAndRun != 0:
		return markupSafetyReject(reasonDecodeAndRun)
	}
	for i, re := range g.patterns {
		if re.MatchString(adm) {
			return markupSafetyReject(g.reasons[i])
		}
	}
	return engine.Pass()
}

func markupSafetyReject(reason string) engine.Verdict {
	return engine.Reject(reason, markupSafetyLoss, markupSafetyNBR)
}

var _ engine.BidGate = (*markupSafety)(nil)
