package gates

// adomainVerify (OpenRTB 2.6 §4.2.3, Bid.adomain): every advertiser domain
// of a bid must be a real hostname, not a placeholder. Each entry is
// normalised (domain.go); blank entries are ignored. For each domain in
// order, the first failure is reported: no domain left while requireAdomain
// is set, a placeholder (or a name under one, or under a reserved TLD), not
// a hostname. Codes 6 / 300.

import (
	"errors"
	"fmt"

	"github.com/bidguard/bidguard/engine"
)

// adomainVerifyOptions configures adomainVerify.
type adomainVerifyOptions struct {
	// RequireAdomain rejects a bid without a non-blank adomain entry (default true).
	RequireAdomain bool `yaml:"requireAdomain"`
	// ExtraPlaceholders are more placeholder domains (each covers its
	// subdomains), normalised like bid domains; one label is allowed.
	ExtraPlaceholders []string `yaml:"extraPlaceholders"`
}

// validate normalises ExtraPlaceholders and returns them.
func (o *adomainVerifyOptions) validate() ([]string, error) {
	var errs []error
	extra := make([]string, 0, len(o.ExtraPlaceholders))
	for i, p := range o.ExtraPlaceholders {
		d, err := configDomain(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("extraPlaceholders[%d] %q %w", i, p, err))
			continue
		}
		extra = append(extra, d)
	}
	return extra, errors.Join(errs...)
}

type adomainVerify struct {
	require      bool
	placeholders domainSet
}

var adomainVerifyFactory = engine.Factory{
	Name: "adomainVerify", ResultName: "rtb.adomain-verify", Kind: engine.PerBid,
	Options: func() any { return &adomainVerifyOptions{RequireAdomain: true} },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*adomainVerifyOptions)
		extra, err := o.validate()
		if err != nil {
			return nil, err
		}
		return &adomainVerify{
			require:      o.RequireAdomain,
			placeholders: newDomainSet(defaultPlaceholders, reservedTLDs, extra),
		}, nil
	},
}

func (g *adomainVerify) Kind() engine.Kind { return engine.PerBid }

// Prepare never skips: every bid is judged.
func (g *adomainVerify) Prepare(*engine.Input) string { return "" }

// CheckBid checks each adomain entry in order and reports the first failure.
func (g *adomainVerify) CheckBid(_ *engine.Input, b *engine.Bid) engine.Verdict {
	seen := false
	for _, raw := range b.ADomain {
		t := trimSpace(raw)
		if t == "" {
			continue
		}
		seen = true
		d, ok := normalizeTrimmed(t)
		if _, hit := g.placeholders.match(d); hit {
			return engine.Reject("placeholder adomain: "+quote(d), engine.LossInvalidAdvertiserDomain, engine.NBRResponseRejectedGeneral)
		}
		if !ok || !isHostname(d) {
			return engine.Reject("invalid adomain format", engine.LossInvalidAdvertiserDomain, engine.NBRResponseRejectedGeneral)
		}
	}
	if !seen && g.require {
		return engine.Reject("bid has no adomain", engine.LossInvalidAdvertiserDomain, engine.NBRResponseRejectedGeneral)
	}
	return engine.Pass()
}

var _ engine.BidGate = (*adomainVerify)(nil)
