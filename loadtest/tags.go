package main

import "bytes"

// Bid tags. The fake bidder writes a tag into each bid's id and adid:
// "<tag>-<n>", n a serial number. Clients count tags by adid (a bad bid of
// kind no-id has no id, and one of kind dup-id copies another bid's id).
const (
	tagOK   = "ok"   // a valid bid sent on time: must reach the client
	tagLate = "late" // a valid bid in an answer sent past tmax: must not
	tagBad  = "bad-" // prefix of "bad-<kind>": must not reach the client
)

var adidKey = []byte(`"adid"`)

// forEachBidTag calls fn with the tag of every "adid" member of body whose
// value has the shape "<tag>-<digits>". It reads raw JSON bytes without
// decoding: the bidder writes tags without escapes, and an "adid" inside a
// string (preceded by a backslash) is skipped. fn must not retain tag.
func forEachBidTag(body []byte, fn func(tag []byte)) {
	for {
		i := bytes.Index(body, adidKey)
		if i < 0 {
			return
		}
		escaped := i > 0 && body[i-1] == '\\'
		body = body[i+len(adidKey):]
		if escaped {
			continue
		}
		j := 0
		for j < len(body) && (body[j] == ' ' || body[j] == '\t' || body[j] == '\n' || body[j] == '\r' || body[j] == ':') {
			j++
		}
		if j == len(body) || body[j] != '"' {
			continue
		}
		v := body[j+1:]
		end := bytes.IndexByte(v, '"')
		if end < 0 {
			return
		}
		if tag, ok := splitTag(v[:end]); ok {
			fn(tag)
		}
		body = v[end:]
	}
}

// splitTag returns the tag of "<tag>-<digits>".
func splitTag(v []byte) ([]byte, bool) {
	dash := bytes.LastIndexByte(v, '-')
	if dash <= 0 || dash == len(v)-1 {
		return nil, false
	}
	for _, c := range v[dash+1:] {
		if c < '0' || c > '9' {
			return nil, false
		}
	}
	return v[:dash], true
}
