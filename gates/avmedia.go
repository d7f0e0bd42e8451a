package gates

// Video and audio bids as videoCompliance and podCompliance read them
// (OpenRTB 2.6 §3.2.7 Video, §3.2.8 Audio, §4.2.3 Bid.dur, mtype,
// slotinpod; the implementation guide's 7.6 "Pod Bidding for Video and
// Audio").
//
// A bid is judged against its media object: the imp's video when mtype is
// 2, its audio when mtype is 3; a bid without mtype on an imp whose only
// media object is a video (or an audio) uses that one. Any other bid is
// skipped by both gates with one of the reasons below. The bid's duration
// is dur when it is > 0, else the duration of its inline VAST markup
// (gates/markup ReadVAST), else none. Everything here allocates nothing.

import (
	"strconv"
	"strings"

	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates/markup"
)

// Per-bid skips of the video and audio gates. The why labels of
// bidguard_bids_skipped_total are skipWhyImp and skipWhyAVMedia.
const (
	reasonNotAV          = "not a video or audio bid"
	reasonAVSeveral      = "bid has no mtype and imp offers several media types"
	reasonImpNoVideo     = "imp offers no video"
	reasonImpNoAudio     = "imp offers no audio"
	skipWhyAVMedia       = "media"
	reasonNoAVInRequest  = "no video or audio in request"
	reasonNoPodInRequest = "no pod in request"
)

// avObject is the media object a video or audio bid is judged against:
// the fields of openrtb2.Video or openrtb2.Audio the gates read.
type avObject struct {
	audio          bool
	mimes          []string
	minDur, maxDur int64
	rqdDurs        []int64
	protocols      []adcom1.MediaCreativeSubtype
	// protocol is the video's OpenRTB 2.5 single protocol (audio has none).
	protocol     adcom1.MediaCreativeSubtype
	minCPMPerSec float64
	podID        string
	podDur       int64
	maxSeq       int64
	slotInPod    adcom1.SlotPositionInPod
}

func videoObject(v *openrtb2.Video) avObject {
	return avObject{mimes: v.MIMEs, minDur: v.MinDuration, maxDur: v.MaxDuration, rqdDurs: v.RqdDurs,
		protocols: v.Protocols, protocol: v.Protocol, minCPMPerSec: v.MinCPMPerSec,
		podID: v.PodID, podDur: v.PodDur, maxSeq: v.MaxSeq, slotInPod: v.SlotInPod}
}

func audioObject(a *openrtb2.Audio) avObject {
	return avObject{audio: true, mimes: a.MIMEs, minDur: a.MinDuration, maxDur: a.MaxDuration, rqdDurs: a.RqdDurs,
		protocols: a.Protocols, minCPMPerSec: a.MinCPMPerSec,
		podID: a.PodID, podDur: a.PodDur, maxSeq: a.MaxSeq, slotInPod: a.SlotInPod}
}

// inPod: the object has a podid, poddur > 0, maxseq > 0 or slotinpod ≠ 0.
func (o *avObject) inPod() bool {
	return o.podID != "" || o.podDur > 0 || o.maxSeq > 0 || o.slotInPod != 0
}

// dynamic: the object is a dynamic pod (poddur > 0 or maxseq > 0).
func (o *avObject) dynamic() bool { return o.podDur > 0 || o.maxSeq > 0 }

// avBid resolves the bid's imp and media object; ok is false when the bid
// is not a video or audio bid, skip then being its per-bid skip.
func avBid(in *engine.Input, b *engine.Bid) (imp *openrtb2.Imp, o avObject, skip engine.Verdict, ok bool) {
	imp = in.ImpOf(b)
	if imp == nil {
		return nil, o, engine.SkipBid(reasonNoImp, skipWhyImp), false
	}
	m := mtypeMedia(b.MType)
	if b.MType == 0 {
		offered := offeredMedia(imp)
		if offered.count() > 1 {
			return imp, o, engine.SkipBid(reasonAVSeveral, skipWhyAVMedia), false
		}
		m = offered.only()
	}
	switch m {
	case mediaVideo:
		if imp.Video == nil {
			return imp, o, engine.SkipBid(reasonImpNoVideo, skipWhyAVMedia), false
		}
		return imp, videoObject(imp.Video), skip, true
	case mediaAudio:
		if imp.Audio == nil {
			return imp, o, engine.SkipBid(reasonImpNoAudio, skipWhyAVMedia), false
		}
		return imp, audioObject(imp.Audio), skip, true
	}
	return imp, o, engine.SkipBid(reasonNotAV, skipWhyAVMedia), false
}

// impObject is the media object of an earlier bid b, as avBid resolves
// it; ok is false when it does not resolve.
func impObject(in *engine.Input, b *engine.Bid) (avObject, bool) {
	_, o, _, ok := avBid(in, b)
	return o, ok
}

// requestHasAV reports whether an imp of the request has a video or audio
// object (with inPod, one in a pod).
func requestHasAV(in *engine.Input, inPod bool) bool {
	for i := range in.Request.Imp {
		imp := &in.Request.Imp[i]
		if imp.Video != nil {
			if o := videoObject(imp.Video); !inPod || o.inPod() {
				return true
			}
		}
		if imp.Audio != nil {
			if o := audioObject(imp.Audio); !inPod || o.inPod() {
				return true
			}
		}
	}
	return false
}

// bidDuration is the bid's duration: dur when > 0, else the VAST
// duration in facts (0: none).
func bidDuration(b *engine.Bid, facts *markup.VASTFacts) int64 {
	if b.Dur > 0 {
		return b.Dur
	}
	return int64(facts.Duration)
}

// durationOf reads the duration of a bid whose VAST has not been read:
// dur > 0 needs no reading.
func durationOf(b *engine.Bid) int64 {
	if b.Dur > 0 {
		return b.Dur
	}
	f := markup.ReadVAST(b.AdM, nil)
	return int64(f.Duration)
}

// hasMIME reports whether the list holds an entry that is not empty once
// read as a MediaFile type is.
func hasMIME(mimes []string) bool {
	for _, m := range mimes {
		if markup.MediaType(m) != "" {
			return true
		}
	}
	return false
}

// joinProtocols writes a protocols list for a reason (failure path).
func joinProtocols(list []adcom1.MediaCreativeSubtype) string {
	var b strings.Builder
	for i, p := range list {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(int64(p), 10))
	}
	return quote(b.String())
}

// joinDurations writes the rqddurs entries > 0 for a reason (failure
// path).
func joinDurations(list []int64) string {
	var b strings.Builder
	for _, d := range list {
		if d <= 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(d, 10))
	}
	return quote(b.String())
}
