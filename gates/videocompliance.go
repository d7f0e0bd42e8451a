package gates

// videoCompliance (OpenRTB 2.6 §3.2.7 Video, §3.2.8 Audio, §3.2.12 Deal,
// §4.2.3 Bid.dur/protocol; AdCOM 1.0 Creative Subtypes - Audio/Video): a
// video or audio bid (avmedia.go) must fit its media object. For each
// such bid, in this order, the first failure reported:
//  1. dur < 0 → bid duration is negative (3 / 300)
//  2. dur > 0 and a VAST duration that differs → dur <d> does not match
//     VAST duration <v>
//  3. no duration while requireDuration → creative duration missing; a
//     bid without a duration otherwise skips checks 4 and 7
//  4. with rqddurs entries > 0 (others ignored; minduration and
//     maxduration are then not read, 2.6 making them exclusive): the
//     duration is one of them → creative duration <d>s not in rqddurs
//     <list>; else minduration > 0 → creative duration <d>s below
//     minduration <m>, then maxduration > 0 → creative duration <d>s above
//     maxduration <m> (bounds inclusive; maxextended not read)
//  5. protocols (for a video without them, its 2.5 protocol when > 0;
//     neither: skipped): the VAST markup's code (version and kind) is
//     listed → VAST|DAAST <version> <inline|wrapper> not in protocols
//     <list>; then bid.protocol, when > 0 → protocol <n> not in protocols
//     <list>
//  6. mimes (normalised as MediaFile types) and an inline ad with typed
//     MediaFiles: one of them is listed → MediaFile type <t> not in mimes
//  7. the per-second floor: the deal's mincpmpersec in the deal's
//     bidfloorcur (default USD) when the bid's deal carries floor guidance
//     (bidfloor > 0, mincpmpersec > 0 or a durfloors entry), else the
//     media object's in the imp's bidfloorcur (default USD), times the
//     duration, converted to the response currency and compared in
//     integer micro-units as floor does → bid price <p> below [deal ]floor
//     <f> (mincpmpersec <m> x <d>s) (100 / 301, deal 101 / 304); no rate →
//     no rate for <cur>/<floorcur> (3 / 301) unless onMissingRate: pass,
//     which skips the bid (why="rate")
//
// Checks 2-6 are 204 / 353. VAST markup is read by gates/markup ReadVAST;
// markup that is not VAST skips the checks that need it. durfloors are
// not judged; imp.bidfloor stays the floor gate's.

import (
	"strconv"
	"strings"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates/markup"
)

// videoComplianceOptions configures videoCompliance.
type videoComplianceOptions struct {
	// RequireDuration rejects a video or audio bid with neither dur nor a
	// VAST duration (default false: such a bid skips the duration and
	// per-second floor checks).
	RequireDuration bool `yaml:"requireDuration"`
	// OnMissingRate: a bid whose per-second floor cannot be converted to
	// the response currency is rejected (fail, the default) or skipped
	// (pass).
	OnMissingRate missingRate `yaml:"onMissingRate"`
}

type videoCompliance struct {
	requireDuration bool
	passMissingRate bool
}

var videoComplianceFactory = engine.Factory{
	Name: "videoCompliance", ResultName: "rtb.video-compliance", Kind: engine.PerBid,
	Options: func() any { return &videoComplianceOptions{OnMissingRate: missingRateDefault} },
	New: func(opts any, _ engine.Env) (engine.Gate, error) {
		o := opts.(*videoComplianceOptions)
		if err := o.OnMissingRate.validate(); err != nil {
			return nil, err
		}
		return &videoCompliance{requireDuration: o.RequireDuration, passMissingRate: o.OnMissingRate.pass()}, nil
	},
}

func (g *videoCompliance) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request in which no imp has a video or audio object.
func (g *videoCompliance) Prepare(in *engine.Input) string {
	if !requestHasAV(in, false) {
		return reasonNoAVInRequest
	}
	return ""
}

func videoReject(reason string) engine.Verdict {
	return engine.Reject(reason, engine.LossCreativeFilteredIncorrectCreativeFormat, engine.NBRResponseRejectedCreativeIncorrectFormat)
}

// CheckBid judges one video or audio bid; other bids are skipped.
func (g *videoCompliance) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	imp, o, skip, ok := avBid(in, b)
	if !ok {
		return skip
	}
	if b.Dur < 0 {
		return engine.Reject("bid duration is negative", engine.LossInvalidBidResponse, engine.NBRResponseRejectedGeneral)
	}
	facts := markup.ReadVAST(b.AdM, o.mimes)
	if b.Dur > 0 && facts.Duration > 0 && int64(facts.Duration) != b.Dur {
		return videoReject("dur " + strconv.FormatInt(b.Dur, 10) + " does not match VAST duration " + strconv.Itoa(facts.Duration))
	}
	dur := bidDuration(b, &facts)
	if dur == 0 && g.requireDuration {
		return videoReject("creative duration missing")
	}
	if dur > 0 {
		if v := durationFits(&o, dur); v.Failed() {
			return v
		}
	}
	if v := protocolsAllow(&o, b, &facts); v.Failed() {
		return v
	}
	if facts.Kind == markup.VASTInLine && facts.MediaTypes > 0 && hasMIME(o.mimes) && !facts.MediaTypeAccepted {
		return videoReject("MediaFile type " + quote(strings.ToLower(facts.FirstMediaType)) + " not in mimes")
	}
	if dur > 0 {
		return g.perSecondFloor(in, imp, &o, b, dur)
	}
	return engine.Pass()
}

// durationFits is check 4: the duration against rqddurs, or minduration
// and maxduration.
func durationFits(o *avObject, dur int64) engine.Verdict {
	d := strconv.FormatInt(dur, 10)
	listed := false
	for _, r := range o.rqdDurs {
		if r <= 0 {
			continue
		}
		if r == dur {
			return engine.Pass()
		}
		listed = true
	}
	if listed {
		return videoReject("creative duration " + d + "s not in rqddurs " + joinDurations(o.rqdDurs))
	}
	if o.minDur > 0 && dur < o.minDur {
		return videoReject("creative duration " + d + "s below minduration " + strconv.FormatInt(o.minDur, 10))
	}
	if o.maxDur > 0 && dur > o.maxDur {
		return videoReject("creative duration " + d + "s above maxduration " + strconv.FormatInt(o.maxDur, 10))
	}
	return engine.Pass()
}

// protocolsAllow is check 5: the VAST markup's code, then bid.protocol,
// among the allowed protocols.
func protocolsAllow(o *avObject, b *engine.Bid, facts *markup.VASTFacts) engine.Verdict {
	allowed := o.protocols
	var single [1]adcom1.MediaCreativeSubtype
	if len(allowed) == 0 && o.protocol > 0 {
		single[0] = o.protocol
		allowed = single[:]
	}
	if len(allowed) == 0 {
		return engine.Pass()
	}
	if facts.Kind != markup.NoVAST && !containsProtocol(allowed, adcom1.MediaCreativeSubtype(facts.Protocol)) {
		name := "VAST "
		if facts.DAAST {
			name = "DAAST "
		}
		return videoReject(name + quote(facts.Version) + " " + facts.Kind.String() + " not in protocols " + joinProtocols(allowed))
	}
	if b.Protocol > 0 && !containsProtocol(allowed, b.Protocol) {
		return videoReject("protocol " + strconv.FormatInt(int64(b.Protocol), 10) + " not in protocols " + joinProtocols(allowed))
	}
	return engine.Pass()
}

func containsProtocol(list []adcom1.MediaCreativeSubtype, p adcom1.MediaCreativeSubtype) bool {
	if p == 0 {
		return false
	}
	for _, x := range list {
		if x == p {
			return true
		}
	}
	return false
}

// perSecondFloor is check 7.
func (g *videoCompliance) perSecondFloor(in *engine.Input, imp *openrtb2.Imp, o *avObject, b *engine.Bid, dur int64) engine.Verdict {
	perSec, cur, isDeal := o.minCPMPerSec, imp.BidFloorCur, false
	if d := findDeal(imp.PMP, b.DealID); d != nil && dealGuidesFloor(d) {
		perSec, cur, isDeal = d.MinCPMPerSec, d.BidFloorCur, true
	}
	if !(perSec > 0) {
		return engine.Pass()
	}
	v, done, price, floor, _ := underFloor(in, b, perSec*float64(dur), cur, g.passMissingRate)
	if done {
		return v
	}
	return floorReject(price, " "+formatFloor(floor, true)+" (mincpmpersec "+formatNum(perSec)+" x "+strconv.FormatInt(dur, 10)+"s)", isDeal)
}

// dealGuidesFloor: the deal carries floor guidance (bidfloor > 0,
// mincpmpersec > 0 or a durfloors entry), which replaces the media
// object's (implementation guide 7.11).
func dealGuidesFloor(d *openrtb2.Deal) bool {
	return d.BidFloor > 0 || d.MinCPMPerSec > 0 || len(d.DurFloors) > 0
}

var _ engine.BidGate = (*videoCompliance)(nil)
