package gates

// How the markup gates route an adm to gates/markup's readers: by what the
// exchange will render it with, never by its first bytes.

import (
	"unsafe"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates/markup"
)

// markupBytes views s as bytes without copying. The result must never be written.
func markupBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// admReading is the reading of a bid's adm: its media type (mtype, else its
// imp's only offered type) decides: a banner is HTML whatever its first
// bytes, video and audio are VAST, native is native JSON. When nothing
// tells, 0: readMarkup then reads it under every reading that applies
// (markup.Sniff, which reads the bytes and so runs only on a cache miss).
func admReading(in *engine.Input, b *engine.Bid) markup.Reading {
	m := mtypeMedia(b.MType)
	if b.MType == 0 && in != nil {
		if imp := in.ImpOf(b); imp != nil {
			m = bidMedia(b.Bid, imp)
		}
	}
	switch m {
	case mediaBanner:
		return markup.HTML
	case mediaVideo, mediaAudio:
		return markup.VAST
	case mediaNative:
		return markup.Native
	}
	return 0
}
