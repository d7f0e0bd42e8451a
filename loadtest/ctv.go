package main

import (
	"bytes"
	"math"
	"slices"
	"strconv"
)

// Video and audio answers (OpenRTB 2.6 CTV, audio and ad pods): a valid
// bid for a video or audio imp fits its media object as bidguard's
// videoCompliance and podCompliance gates judge it (docs/gates.md):
//   - dur, and the inline VAST Duration equal to it, in rqddurs (the first
//     entry that fits the pod) or within minduration..maxduration (15 s
//     when allowed), never longer than a dynamic pod's poddur;
//   - VAST written in a version whose AdCOM protocol code is in protocols
//     (4.0 inline when protocols is empty; a wrapper, with dur, when only
//     wrapper codes are listed);
//   - a MediaFile type from mimes;
//   - a price at or over mincpmpersec × dur (and the imp's floor);
//   - no slotinpod, and on a dynamic pod no more bids than maxseq and
//     poddur hold together (podFit: all), each valid bid of an answer with
//     its own adomain, and bids that can share a break with distinct
//     categories (exclusive: [adomain, cat]).
// An imp none of whose answers can be valid (its protocols list no code
// the bidder writes, no plain MIME type, rqddurs all longer than poddur) is
// not bid on.

// avAnswer is the valid answer to a video or audio imp.
type avAnswer struct {
	dur   int // seconds
	proto int // the AdCOM code of the markup written
	mime  int // index into avInfo.mimes; -1: the default type
}

// maxPodFill bounds the valid bids pod-overfill writes before its bad one.
const maxPodFill = 50

// vastCodes are the AdCOM 1.0 Creative Subtypes the bidder writes: the
// VAST version of each and whether it is a wrapper. VAST 1.0 (1, 4) and
// DAAST (9, 10) are not written.
var vastCodes = map[int]struct {
	version string
	wrapper bool
}{
	2: {"2.0", false}, 3: {"3.0", false}, 5: {"2.0", true}, 6: {"3.0", true},
	7: {"4.0", false}, 8: {"4.0", true}, 11: {"4.1", false}, 12: {"4.1", true},
	13: {"4.2", false}, 14: {"4.2", true}, 15: {"4.3", false}, 16: {"4.3", true},
}

// protoPreference is the order valid answers pick a listed code in:
// inline first (it carries the duration and MediaFiles), newest common
// versions first.
var protoPreference = [...]int{7, 3, 2, 11, 13, 15, 8, 6, 5, 12, 14, 16}

var (
	defaultVideoMime = []byte("video/mp4")
	defaultAudioMime = []byte("audio/mpeg")
)

// answerAV returns the valid answer to a video or audio imp, ok false
// when none exists.
func answerAV(imp *impInfo) (avAnswer, bool) {
	a := &imp.av
	ans := avAnswer{proto: 7, mime: -1}
	if len(a.protocols) > 0 {
		ans.proto = 0
		for _, c := range protoPreference {
			if slices.Contains(a.protocols, c) {
				ans.proto = c
				break
			}
		}
		if ans.proto == 0 {
			return avAnswer{}, false
		}
	}
	if len(a.mimes) > 0 {
		ans.mime = slices.IndexFunc(a.mimes, func(m []byte) bool { return plainMime(normMime(m)) })
		if ans.mime < 0 {
			return avAnswer{}, false
		}
	}
	d, ok := validDur(a)
	if !ok {
		return avAnswer{}, false
	}
	ans.dur = d
	if imp.floor > 0 && perSecFloor(imp, d) > imp.floor*maxValidMultiple {
		return avAnswer{}, false // no price passes both the per-second floor and bidSanity
	}
	return ans, true
}

// validDur is the duration of valid answers: the first rqddurs entry that
// fits the pod, else 15 s brought within minduration..maxduration and
// poddur.
func validDur(a *avInfo) (int, bool) {
	if len(a.rqddurs) > 0 {
		for _, d := range a.rqddurs {
			if a.podDur <= 0 || d <= a.podDur {
				return d, true
			}
		}
		return 0, false
	}
	d := 15
	if a.minDur > 0 && d < a.minDur {
		d = a.minDur
	}
	if a.maxDur > 0 && d > a.maxDur {
		d = a.maxDur
	}
	if a.podDur > 0 && d > a.podDur {
		d = a.podDur
	}
	return d, d >= a.minDur && d > 0
}

// capacity is how many valid bids of the answer's duration the imp's
// dynamic pod holds together (maxseq, poddur); maxPodFill+1 for "many".
func (ans avAnswer) capacity(imp *impInfo) int {
	c := maxPodFill + 1
	if imp.av.maxSeq > 0 {
		c = min(c, imp.av.maxSeq)
	}
	if imp.av.podDur > 0 && ans.dur > 0 {
		c = min(c, imp.av.podDur/ans.dur)
	}
	return c
}

// mimeBytes is the MediaFile type valid answers write (normalised on
// write).
func (ans avAnswer) mimeBytes(imp *impInfo, media int) []byte {
	switch {
	case ans.mime >= 0:
		return imp.av.mimes[ans.mime]
	case media == mtAudio:
		return defaultAudioMime
	}
	return defaultVideoMime
}

// perSecFloor is the imp's per-second floor for a bid of dur seconds.
func perSecFloor(imp *impInfo, dur int) float64 {
	if imp.av.perSec <= 0 || dur <= 0 {
		return 0
	}
	return imp.av.perSec * float64(dur)
}

// normMime is a MIME type as the gates compare it: parameters after ';'
// dropped, XML whitespace trimmed (lower-casing is left to the writer and
// to sameMime).
func normMime(m []byte) []byte {
	if i := bytes.IndexByte(m, ';'); i >= 0 {
		m = m[:i]
	}
	return bytes.Trim(m, " \t\r\n")
}

// plainMime reports whether m can be written as is into a VAST attribute
// and a JSON string: type/subtype of letters, digits and +.-.
func plainMime(m []byte) bool {
	slash := 0
	for _, c := range m {
		switch {
		case c == '/':
			slash++
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '+', c == '.', c == '-':
		default:
			return false
		}
	}
	return slash == 1 && m[0] != '/' && m[len(m)-1] != '/'
}

// offersMime reports whether the media object lists MIME type m.
func offersMime(a *avInfo, m string) bool {
	return slices.ContainsFunc(a.mimes, func(x []byte) bool { return bytes.EqualFold(normMime(x), []byte(m)) })
}

// isAV reports whether the bidder answers imp with video or audio.
func isAV(_ *reqInfo, imp *impInfo) bool {
	mt := imp.media()
	return mt == mtVideo || mt == mtAudio
}

// answerOf is the valid answer to a video or audio imp (ok false: none).
func answerOf(imp *impInfo) (avAnswer, bool) {
	if !isAV(nil, imp) {
		return avAnswer{}, false
	}
	return answerAV(imp)
}

// inlineAnswer reports whether the valid answer to imp is inline VAST (it
// has a Duration and MediaFiles).
func inlineAnswer(imp *impInfo) bool {
	ans, ok := answerOf(imp)
	return ok && !vastCodes[ans.proto].wrapper
}

// durNotIn returns a duration that is not in ds.
func durNotIn(ds []int) int {
	for _, d := range [...]int{15, 30, 20, 10, 45, 60, 5, 90} {
		if !slices.Contains(ds, d) {
			return d
		}
	}
	return slices.Max(ds) + 1
}

// unlistedInline returns an inline code the bidder writes that protocols
// does not list (0: none).
func unlistedInline(protocols []int) int {
	for _, c := range protoPreference {
		if !vastCodes[c].wrapper && !slices.Contains(protocols, c) {
			return c
		}
	}
	return 0
}

// unlistedCode returns an AdCOM code 1-16 that protocols does not list
// (0: none).
func unlistedCode(protocols []int) int {
	for c := 1; c <= 16; c++ {
		if !slices.Contains(protocols, c) {
			return c
		}
	}
	return 0
}

// otherMime returns a MIME type of the imp's media that mimes does not
// list.
func otherMime(imp *impInfo) string {
	cands := []string{"video/webm", "video/ogg", "video/3gpp", "video/quicktime", "video/x-flv"}
	if imp.media() == mtAudio {
		cands = []string{"audio/ogg", "audio/aac", "audio/wav", "audio/flac", "audio/webm"}
	}
	for _, m := range cands {
		if !offersMime(&imp.av, m) {
			return m
		}
	}
	return "application/x-loadtest"
}

// underPerSecPrice returns a price at or over the imp's floor but under
// its per-second floor for the valid answer's duration, in whole
// micro-units; ok false when there is none.
func underPerSecPrice(imp *impInfo) (float64, bool) {
	ans, ok := answerOf(imp)
	if !ok {
		return 0, false
	}
	pf := math.Round(perSecFloor(imp, ans.dur) * 1e6)
	p := math.Ceil(max(imp.floor*1e6, pf/2, 1) - 1e-6)
	return p / 1e6, p < pf
}

// badSlot returns a bid slotinpod that imp slot position s does not
// guarantee: first for an imp that guarantees none or the last, last for
// the first, and 3 (no position) when the imp guarantees both.
func badSlot(s int) int {
	switch s {
	case 1:
		return -1
	case 2:
		return 3
	}
	return 1
}

// longDur returns a duration the media object allows (rqddurs, or
// minduration..maxduration) that is longer than its poddur; 0: none.
func longDur(a *avInfo) int {
	if a.podDur <= 0 {
		return 0
	}
	if len(a.rqddurs) > 0 {
		for _, d := range a.rqddurs {
			if d > a.podDur {
				return d
			}
		}
		return 0
	}
	d := max(a.podDur+1, a.minDur)
	if a.maxDur > 0 && d > a.maxDur {
		return 0
	}
	return d
}

// podRoom reports whether the imp is a dynamic pod whose valid answers
// take at most maxPodFill bids (min: at least that many) together.
func podRoom(imp *impInfo, lo int) bool {
	ans, ok := answerOf(imp)
	if !ok || !imp.av.dynamic() {
		return false
	}
	c := ans.capacity(imp)
	return c >= lo && c <= maxPodFill
}

// videoKinds break one rule of videoCompliance or podCompliance each
// (docs/gates.md "Video and audio gates"). Neither gate is in the embedded
// default policy, so all are pending; the pod kinds marked with needs are
// bad only under that gate option.
var videoKinds = []*kind{
	{name: "video-negative-dur", gate: "rtb.video-compliance", pending: true, applies: isAV,
		apply: func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.dur = -1 }},
	{name: "video-dur-mismatch", gate: "rtb.video-compliance", pending: true,
		applies: func(_ *reqInfo, imp *impInfo) bool { return inlineAnswer(imp) },
		apply:   func(_ *reqInfo, _ *impInfo, b *bidSpec) { b.dur = b.vastDur + 1 }},
	{name: "video-dur-rqddurs", gate: "rtb.video-compliance", pending: true,
		applies: func(r *reqInfo, imp *impInfo) bool { return isAV(r, imp) && len(imp.av.rqddurs) > 0 },
		apply: func(_ *reqInfo, imp *impInfo, b *bidSpec) {
			b.dur = durNotIn(imp.av.rqddurs)
			b.vastDur = b.dur
		}},
	{name: "video-dur-range", gate: "rtb.video-compliance", pending: true,
		applies: func(r *reqInfo, imp *impInfo) bool {
			return isAV(r, imp) && len(imp.av.rqddurs) == 0 && (imp.av.maxDur > 0 || imp.av.minDur > 1)
		},
		apply: func(_ *reqInfo, imp *impInfo, b *bidSpec) {
			if imp.av.maxDur > 0 {
				b.dur = imp.av.maxDur + 1
			} else {
				b.dur = imp.av.minDur - 1
			}
			b.vastDur = b.dur
		}},
	{name: "video-protocol", gate: "rtb.video-compliance", pending: true,
		applies: func(r *reqInfo, imp *impInfo) bool {
			return isAV(r, imp) && len(imp.av.protocols) > 0 && unlistedInline(imp.av.protocols) != 0
		},
		apply: func(_ *reqInfo, imp *impInfo, b *bidSpec) { b.proto = unlistedInline(imp.av.protocols) }},
	{name: "video-bid-protocol", gate: "rtb.video-compliance", pending: true,
		applies: func(r *reqInfo, imp *impInfo) bool {
			return isAV(r, imp) && len(imp.av.protocols) > 0 && unlistedCode(imp.av.protocols) != 0
		},
		apply: func(_ *reqInfo, imp *impInfo, b *bidSpec) { b.bidProtocol = unlistedCode(imp.av.protocols) }},
	{name: "video-mime", gate: "rtb.video-compliance", pending: true,
		applies: func(_ *reqInfo, imp *impInfo) bool { return inlineAnswer(imp) && len(imp.av.mimes) > 0 },
		apply:   func(_ *reqInfo, imp *impInfo, b *bidSpec) { b.mime = []byte(otherMime(imp)) }},
	{name: "video-below-floor", gate: "rtb.video-compliance", pending: true,
		applies: func(_ *reqInfo, imp *impInfo) bool { _, ok := underPerSecPrice(imp); return ok },
		apply:   func(_ *reqInfo, imp *impInfo, b *bidSpec) { b.price, _ = underPerSecPrice(imp) }},
	{name: "pod-slot", gate: "rtb.pod-compliance", pending: true,
		applies: func(r *reqInfo, imp *impInfo) bool { return isAV(r, imp) && imp.av.inPod() },
		apply:   func(_ *reqInfo, imp *impInfo, b *bidSpec) { b.slot = badSlot(imp.av.slot) }},
	{name: "pod-too-long", gate: "rtb.pod-compliance", pending: true,
		applies: func(r *reqInfo, imp *impInfo) bool {
			d := longDur(&imp.av)
			return isAV(r, imp) && d > 0 && (imp.floor <= 0 || perSecFloor(imp, d) <= imp.floor*maxValidMultiple)
		},
		apply: func(_ *reqInfo, imp *impInfo, b *bidSpec) {
			// Priced for its length, so the per-second floor holds.
			d := longDur(&imp.av)
			b.price = validPrice(b.price*float64(d)/float64(max(b.dur, 1)), perSecFloor(imp, d), imp.floor)
			b.dur, b.vastDur = d, d
		}},
	{name: "pod-overfill", gate: "rtb.pod-compliance", pending: true, needs: "podFit: all", pod: podOverfill,
		applies: func(_ *reqInfo, imp *impInfo) bool { return podRoom(imp, 1) }},
	{name: "pod-adomain", gate: "rtb.pod-compliance", pending: true, needs: "exclusive: [adomain]", pod: podShareDomain,
		applies: func(_ *reqInfo, imp *impInfo) bool { return podRoom(imp, 2) }},
	{name: "pod-cat", gate: "rtb.pod-compliance", pending: true, needs: "exclusive: [cat]", pod: podShareCat,
		applies: func(r *reqInfo, imp *impInfo) bool { return podRoom(imp, 2) && len(validCats(r, nil)) > 0 }},
}

// appendVAST writes the VAST markup of a video or audio bid: inline (with
// its Duration when vastDur > 0 and one MediaFile) or a wrapper, in the
// version of protocol code s.proto.
func appendVAST(dst []byte, s *bidSpec, adid, brand []byte) []byte {
	v := vastCodes[s.proto]
	dst = append(dst, `<VAST version="`...)
	dst = append(dst, v.version...)
	dst = append(dst, `"><Ad id="`...)
	dst = append(dst, adid...)
	dst = append(dst, `">`...)
	if v.wrapper {
		dst = append(dst, `<Wrapper><AdSystem>Loadtest DSP</AdSystem><VASTAdTagURI><![CDATA[https://vast.loadtest-dsp.com/tag?id=`...)
		dst = append(dst, adid...)
		dst = append(dst, `]]></VASTAdTagURI><Impression><![CDATA[`+pxHost...)
		dst = append(dst, adid...)
		return append(dst, `]]></Impression></Wrapper></Ad></VAST>`...)
	}
	dst = append(dst, `<InLine><AdSystem>Loadtest DSP</AdSystem><AdTitle>Brand `...)
	dst = append(dst, brand...)
	dst = append(dst, `</AdTitle><Impression><![CDATA[`+pxHost...)
	dst = append(dst, adid...)
	dst = append(dst, `]]></Impression><Creatives><Creative><Linear>`...)
	if s.vastDur > 0 {
		dst = append(dst, `<Duration>`...)
		dst = appendHMS(dst, s.vastDur)
		dst = append(dst, `</Duration>`...)
	}
	ext := ".mp4"
	if s.media == mtAudio {
		ext = ".mp3"
	}
	dst = append(dst, `<MediaFiles><MediaFile delivery="progressive" type="`...)
	for _, c := range normMime(s.mime) {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	dst = append(dst, `" width="1920" height="1080"><![CDATA[https://cdn.brand-`...)
	dst = append(dst, brand...)
	dst = append(dst, `.com/v/`...)
	dst = strconv.AppendInt(dst, int64(max(s.vastDur, 0)), 10)
	dst = append(dst, 's')
	dst = append(dst, ext...)
	return append(dst, `]]></MediaFile></MediaFiles></Linear></Creative></Creatives></InLine></Ad></VAST>`...)
}

// appendHMS writes seconds as VAST's HH:MM:SS.
func appendHMS(dst []byte, sec int) []byte {
	h, m, s := sec/3600, sec/60%60, sec%60
	for i, v := range [...]int{h, m, s} {
		if i > 0 {
			dst = append(dst, ':')
		}
		dst = append(dst, byte('0'+v/10%10), byte('0'+v%10))
	}
	return dst
}
