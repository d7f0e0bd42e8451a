package gates

import (
	"github.com/prebid/openrtb/v20/adcom1"
	"github.com/prebid/openrtb/v20/openrtb2"
)

// Media type resolution shared by battrCompliance, creativeSize and
// mediaType (OpenRTB 2.6 §3.2.4 Imp, §4.2.3 Bid.mtype). A 2.6 bid names its
// media type in mtype; a 2.5 bid has none, and its type is inferred from the
// imp when the imp offers exactly one. Everything here reads the decoded
// structs only and allocates nothing.

// media is a media type numbered as Bid.mtype: 1 banner, 2 video, 3 audio,
// 4 native; mediaUnknown (0) when nothing tells.
type media uint8

const (
	mediaUnknown media = iota
	mediaBanner
	mediaVideo
	mediaAudio
	mediaNative
)

// reasonNoImp is the per-bid skip of the media gates for a bid whose impid
// names no request imp (impidMatch rejects it); skipWhyImp is its label in
// bidguard_bids_skipped_total{why}.
const (
	reasonNoImp = "bid matches no imp"
	skipWhyImp  = "imp"
)

// mediaSet is the set of media types an imp offers, one bit per type.
type mediaSet uint8

func (s mediaSet) has(m media) bool { return m != mediaUnknown && s&(1<<m) != 0 }

// count is the number of offered types.
func (s mediaSet) count() int {
	n := 0
	for m := mediaBanner; m <= mediaNative; m++ {
		if s.has(m) {
			n++
		}
	}
	return n
}

// only is the single offered type, or mediaUnknown when the imp offers none
// or several.
func (s mediaSet) only() media {
	found := mediaUnknown
	for m := mediaBanner; m <= mediaNative; m++ {
		if !s.has(m) {
			continue
		}
		if found != mediaUnknown {
			return mediaUnknown
		}
		found = m
	}
	return found
}

// offeredMedia is the set of media objects the imp carries (banner, video,
// audio, native). An object sent as null is not offered; {} is.
func offeredMedia(imp *openrtb2.Imp) mediaSet {
	var s mediaSet
	if imp.Banner != nil {
		s |= 1 << mediaBanner
	}
	if imp.Video != nil {
		s |= 1 << mediaVideo
	}
	if imp.Audio != nil {
		s |= 1 << mediaAudio
	}
	if imp.Native != nil {
		s |= 1 << mediaNative
	}
	return s
}

// mtypeMedia maps a present mtype to its media type; values outside 1-4
// (and the absent 0) are mediaUnknown.
func mtypeMedia(mt openrtb2.MarkupType) media {
	if mt >= openrtb2.MarkupBanner && mt <= openrtb2.MarkupNative {
		return media(mt)
	}
	return mediaUnknown
}

// bidMedia resolves the bid's media type: mtype when present (mediaUnknown
// for an unknown value), else the imp's only offered type, else
// mediaUnknown.
func bidMedia(b *openrtb2.Bid, imp *openrtb2.Imp) media {
	if b.MType != 0 {
		return mtypeMedia(b.MType)
	}
	return offeredMedia(imp).only()
}

// mediaBAttr returns the battr of the imp's media object of type m, and
// whether the imp carries that object.
func mediaBAttr(imp *openrtb2.Imp, m media) ([]adcom1.CreativeAttribute, bool) {
	switch m {
	case mediaBanner:
		if imp.Banner != nil {
			return imp.Banner.BAttr, true
		}
	case mediaVideo:
		if imp.Video != nil {
			return imp.Video.BAttr, true
		}
	case mediaAudio:
		if imp.Audio != nil {
			return imp.Audio.BAttr, true
		}
	case mediaNative:
		if imp.Native != nil {
			return imp.Native.BAttr, true
		}
	}
	return nil, false
}

// impHasBAttr reports whether any media object of the imp blocks an attribute.
func impHasBAttr(imp *openrtb2.Imp) bool {
	for m := mediaBanner; m <= mediaNative; m++ {
		if ba, _ := mediaBAttr(imp, m); len(ba) > 0 {
			return true
		}
	}
	return false
}

// attrBlocked reports whether attribute a is blocked for a creative of type
// m on imp: by the battr of the imp's object of type m when the imp carries
// it, otherwise (m unknown, or an object the imp does not carry) by the
// union of the battr of all its media objects.
func attrBlocked(imp *openrtb2.Imp, m media, a adcom1.CreativeAttribute) bool {
	if ba, ok := mediaBAttr(imp, m); ok {
		return containsAttr(ba, a)
	}
	for m := mediaBanner; m <= mediaNative; m++ {
		if ba, _ := mediaBAttr(imp, m); containsAttr(ba, a) {
			return true
		}
	}
	return false
}

func containsAttr(list []adcom1.CreativeAttribute, a adcom1.CreativeAttribute) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}
