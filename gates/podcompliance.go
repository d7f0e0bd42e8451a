package gates

// podCompliance (OpenRTB 2.6 §3.2.7 Video and §3.2.8 Audio podid, poddur,
// maxseq, slotinpod; §4.2.3 Bid.slotinpod, dur, adomain, cat; the
// implementation guide's 7.6 "Pod Bidding for Video and Audio"; AdCOM 1.0
// Slot Position in Pod): the bids for an ad pod must fit it. An imp is in
// a pod when its media object (avmedia.go) has a podid, poddur > 0,
// maxseq > 0 or slotinpod ≠ 0, and is a dynamic pod when poddur > 0 or
// maxseq > 0. A pod, for separation, is the imps whose media objects share
// a podid, or one imp without podid.
//
// The gate judges its bids in response order, across seats (in a seat
// policy, that seat's), and keeps, per imp and per pod, the bids it has
// passed that no earlier gate rejected (engine.Input.Passed): a bid it
// fails, or that an earlier gate removed, takes no place. For each bid:
//  1. slot: a bid slotinpod ≠ 0 (-1 last, 1 first, 2 first or last; an
//     unknown value none) needs the imp's slotinpod to guarantee one of
//     its positions (imp 1 first, -1 last, 2 both, anything else none) →
//     slotinpod <b> not guaranteed by imp <id> (slotinpod <i>)
//  2. fit, dynamic pods: podFit each (default): the bid's own duration is
//     at most poddur; podFit all: the imp's kept bids and this one are at
//     most maxseq → pod of imp <id> exceeds maxseq <n>, and their
//     durations sum to at most poddur → pod of imp <id> exceeds poddur
//     <n>s (<sum>s) (a bid without duration counts toward maxseq and adds
//     nothing). Codes 3 / 300 for 1 and 2.
//  3. separation, for each field of exclusive in order and each of the
//     bid's values in order: the first earlier kept bid of the pod that
//     can play in the same break (not a bid for the same imp when that imp
//     is not a dynamic pod or has maxseq 1: those are alternatives for one
//     slot) and shares the value → competitive separation: adomain <d>
//     shared with bid <id> (205 / 355; domains normalised as badv's,
//     equal or one under the other) / competitive separation: cat <c>
//     shared with bid <id> (209 / 357; within one cattax, default 1,
//     case-insensitively; a Content 1.0 code shares with the codes it
//     covers and those covering it).
//
// A bid is compared with the bids before it, as uniqueBidId does: the gate
// keeps no per-request state, so the cost is O(n²) in the bids of the
// response, and a kept bid without dur has its VAST read again for each
// later bid of its imp under podFit: all (the kept bids of an imp are at
// most maxseq, or poddur one-second bids).

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/bidguard/bidguard/engine"
)

// podComplianceOptions configures podCompliance.
type podComplianceOptions struct {
	// Exclusive lists the fields that bids able to play in one break may
	// not share: adomain, cat (default none: no separation).
	Exclusive []string `yaml:"exclusive"`
	// PodFit is how a dynamic pod's bids must fit it: each (default: only
	// a bid longer than poddur fails) or all (the bids kept in response
	// order fit maxseq and poddur together).
	PodFit string `yaml:"podFit"`
}

func (o *podComplianceOptions) validate() error {
	var errs []error
	for i, f := range o.Exclusive {
		if f != "adomain" && f != "cat" {
			errs = append(errs, fmt.Errorf("exclusive[%d] must be adomain or cat", i))
		}
	}
	if o.PodFit != "each" && o.PodFit != "all" {
		errs = append(errs, errors.New("podFit must be each or all"))
	}
	return errors.Join(errs...)
}

// Separation fields, in the order exclusive lists them.
type podField uint8

const (
	podAdomain podField = iota + 1
	podCat
)

type podCompliance struct {
	exclusive []podField
	fitAll    bool
}

var podComplianceFactory = engine.Factory{
	Name: "podCompliance", ResultName: "rtb.pod-compliance", Kind: engine.PerBid,
	Options: func() any { return &podComplianceOptions{PodFit: "each"} },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*podComplianceOptions)
		if err := o.validate(); err != nil {
			return nil, err
		}
		g := &podCompliance{fitAll: o.PodFit == "all"}
		for _, f := range o.Exclusive {
			field := podAdomain
			if f == "cat" {
				field = podCat
			}
			g.exclusive = append(g.exclusive, field)
		}
		return g, nil
	},
}

// reasonNotInPod is the per-bid skip of a bid whose media object is not in
// a pod.
const reasonNotInPod = "imp not in a pod"

func (g *podCompliance) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request in which no imp's video or audio is in a pod.
func (g *podCompliance) Prepare(in *engine.Input) string {
	if !requestHasAV(in, true) {
		return reasonNoPodInRequest
	}
	return ""
}

func podReject(reason string) engine.Verdict {
	return engine.Reject(reason, engine.LossInvalidBidResponse, engine.NBRResponseRejectedGeneral)
}

// CheckBid judges a bid with the kept bids before it.
func (g *podCompliance) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	imp, o, skip, ok := avBid(in, b)
	if !ok {
		return skip
	}
	if !o.inPod() {
		return engine.SkipBid(reasonNotInPod, "pod")
	}
	if b.SlotInPod != 0 && !slotGuaranteed(b.SlotInPod, o.slotInPod) {
		return podReject("slotinpod " + strconv.FormatInt(int64(b.SlotInPod), 10) + " not guaranteed by imp " + quote(imp.ID) +
			" (slotinpod " + strconv.FormatInt(int64(o.slotInPod), 10) + ")")
	}
	if o.dynamic() {
		if v := g.fit(in, b, imp, &o); v.Failed() {
			return v
		}
	}
	for _, f := range g.exclusive {
		if v := separate(in, b, &o, f); v.Failed() {
			return v
		}
	}
	return engine.Pass()
}

// Slot positions as sets: first and last.
const (
	slotFirst = 1 << iota
	slotLast
)

// slotPositions maps an AdCOM Slot Position in Pod value to the positions
// it names: -1 last, 1 first, 2 first or last; 0 and unknown values none.
func slotPositions(s adcom1.SlotPositionInPod) int {
	switch s {
	case -1:
		return slotLast
	case 1:
		return slotFirst
	case 2:
		return slotFirst | slotLast
	}
	return 0
}

// slotGuaranteed: the imp guarantees one of the positions the bid asks for.
func slotGuaranteed(bid, imp adcom1.SlotPositionInPod) bool {
	return slotPositions(bid)&slotPositions(imp) != 0
}

// fit is check 2 on a dynamic pod.
func (g *podCompliance) fit(in *engine.Input, b *engine.Bid, imp *openrtb2.Imp, o *avObject) engine.Verdict {
	dur := durationOf(b)
	if !g.fitAll {
		if o.podDur > 0 && dur > o.podDur {
			return podDurReject(imp, o.podDur, dur)
		}
		return engine.Pass()
	}
	count, sum := int64(1), dur
	for j := range in.Bids {
		c := &in.Bids[j]
		if c == b {
			break
		}
		if !in.Passed(j) || c.ImpID != b.ImpID {
			continue
		}
		count++
		if o.podDur > 0 {
			sum += durationOf(c)
		}
	}
	if o.maxSeq > 0 && count > o.maxSeq {
		return podReject("pod of imp " + quote(imp.ID) + " exceeds maxseq " + strconv.FormatInt(o.maxSeq, 10))
	}
	if o.podDur > 0 && sum > o.podDur {
		return podDurReject(imp, o.podDur, sum)
	}
	return engine.Pass()
}

func podDurReject(imp *openrtb2.Imp, podDur, sum int64) engine.Verdict {
	return podReject("pod of imp " + quote(imp.ID) + " exceeds poddur " + strconv.FormatInt(podDur, 10) + "s (" + strconv.FormatInt(sum, 10) + "s)")
}

// sharesBreak reports whether the earlier kept bid c (on an imp with
// media object co) is in the pod of b (on imp with object o) and can play
// in the same break.
func sharesBreak(b, c *engine.Bid, o, co *avObject) bool {
	if b.ImpID == c.ImpID {
		return o.dynamic() && o.maxSeq != 1
	}
	return o.podID != "" && co.podID == o.podID
}

// separate is check 3 for one field.
func separate(in *engine.Input, b *engine.Bid, o *avObject, f podField) engine.Verdict {
	var values []string
	switch f {
	case podAdomain:
		values = b.ADomain
	case podCat:
		values = b.Cat
	}
	for _, v := range values {
		var d string
		switch f {
		case podAdomain:
			if strings.TrimSpace(v) == "" {
				continue
			}
			d, _ = normalizeDomain(v)
		case podCat:
			if v == "" {
				continue
			}
		}
		for j := range in.Bids {
			c := &in.Bids[j]
			if c == b {
				break
			}
			if !in.Passed(j) {
				continue
			}
			co, ok := impObject(in, c)
			if !ok || !sharesBreak(b, c, o, &co) {
				continue
			}
			switch f {
			case podAdomain:
				if domainListShares(c.ADomain, d) {
					return engine.Reject("competitive separation: adomain "+quote(trimDot(d))+" shared with bid "+quote(c.ID),
						engine.LossCreativeFilteredAdvertiserExclusions, engine.NBRResponseRejectedCreativeAdvertiserExclusions)
				}
			case podCat:
				if catListShares(c.Cat, c.CatTax, v, b.CatTax) {
					return engine.Reject("competitive separation: cat "+quote(v)+" shared with bid "+quote(c.ID),
						engine.LossCreativeFilteredCategoryExclusions, engine.NBRResponseRejectedCreativeCategoryExclusions)
				}
			}
		}
	}
	return engine.Pass()
}

// domainListShares reports whether an entry of list, normalised, equals
// the normalised name d or one is under the other.
func domainListShares(list []string, d string) bool {
	for _, e := range list {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if isASCII(e) {
			if underDomainFold(d, e) || underFoldBoth(e, d) {
				return true
			}
			continue
		}
		n, _ := normalizeDomain(e)
		if underDomain(d, n) || underDomain(n, d) {
			return true
		}
	}
	return false
}

// underFoldBoth reports whether the ASCII name child, in any case, equals
// or is under the normalised name parent.
func underFoldBoth(child, parent string) bool {
	child, parent = trimDot(child), trimDot(parent)
	if parent == "" || len(child) < len(parent) {
		return false
	}
	cut := len(child) - len(parent)
	if cut > 0 && child[cut-1] != '.' {
		return false
	}
	return equalFoldASCII(child[cut:], parent)
}

// catListShares reports whether a code of list (in taxonomy tax) shares
// with cat (in taxonomy catTax): same taxonomy, and equal ignoring ASCII
// case or, in Content 1.0, one covering the other.
func catListShares(list []string, tax adcom1.CategoryTaxonomy, cat string, catTax adcom1.CategoryTaxonomy) bool {
	t := catTaxOf(catTax)
	if catTaxOf(tax) != t {
		return false
	}
	for _, c := range list {
		if c == "" {
			continue
		}
		if t == taxContent10 {
			if content10Covers(c, cat) || content10Covers(cat, c) {
				return true
			}
		} else if equalFoldASCII(c, cat) {
			return true
		}
	}
	return false
}

var _ engine.BidGate = (*podCompliance)(nil)
