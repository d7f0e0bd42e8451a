package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fastjson"
)

// This file holds a reference reading of the videoCompliance and
// podCompliance rules (docs/gates.md "Video and audio"), written from the
// rules and independent of the bidder's code and of the gates: the
// bidder's answers are proved good or bad by it here, and by the gates
// themselves through `bidguard check` in ctvgates_test.go.

type ctvVideo struct {
	MinDuration  int      `json:"minduration"`
	MaxDuration  int      `json:"maxduration"`
	RqdDurs      []int    `json:"rqddurs"`
	Protocols    []int    `json:"protocols"`
	Protocol     int      `json:"protocol"`
	Mimes        []string `json:"mimes"`
	PodID        string   `json:"podid"`
	SlotInPod    int      `json:"slotinpod"`
	PodDur       int      `json:"poddur"`
	MaxSeq       int      `json:"maxseq"`
	MinCPMPerSec float64  `json:"mincpmpersec"`
}

type ctvImpJSON struct {
	ID       string          `json:"id"`
	Video    *ctvVideo       `json:"video"`
	Banner   json.RawMessage `json:"banner"`
	Native   json.RawMessage `json:"native"`
	BidFloor float64         `json:"bidfloor"`
}

func (imp *ctvImpJSON) inPod() bool {
	v := imp.Video
	return v != nil && (v.PodID != "" || v.PodDur > 0 || v.MaxSeq > 0 || v.SlotInPod != 0)
}

func (imp *ctvImpJSON) dynamic() bool {
	return imp.Video != nil && (imp.Video.PodDur > 0 || imp.Video.MaxSeq > 0)
}

type ctvBid struct {
	ID        string   `json:"id"`
	AdID      string   `json:"adid"`
	ImpID     string   `json:"impid"`
	Price     float64  `json:"price"`
	ADomain   []string `json:"adomain"`
	Cat       []string `json:"cat"`
	MType     int      `json:"mtype"`
	Dur       int      `json:"dur"`
	Protocol  int      `json:"protocol"`
	SlotInPod int      `json:"slotinpod"`
	Adm       string   `json:"adm"`
}

// vastDoc is what the gates read from VAST markup.
type vastDoc struct {
	ok              bool
	version, kind   string // kind: inline or wrapper
	dur             int    // 0: none
	types           []string
	durText, parsed string
}

// readVAST reads adm with encoding/xml: the root's version, the first
// Ad's InLine or Wrapper, the first Linear's Duration and the MediaFile
// types.
func readVAST(adm string) vastDoc {
	d := xml.NewDecoder(strings.NewReader(adm))
	var v vastDoc
	var path []string
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return vastDoc{}
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name.Local)
			text.Reset()
			switch {
			case len(path) == 1:
				if t.Name.Local != "VAST" {
					return vastDoc{}
				}
				for _, a := range t.Attr {
					if a.Name.Local == "version" {
						v.version = strings.TrimSpace(a.Value)
					}
				}
			case len(path) == 3 && path[1] == "Ad" && v.kind == "":
				v.kind = map[string]string{"InLine": "inline", "Wrapper": "wrapper"}[t.Name.Local]
			case t.Name.Local == "MediaFile" && v.kind == "inline":
				for _, a := range t.Attr {
					if a.Name.Local == "type" {
						typ, _, _ := strings.Cut(a.Value, ";")
						if typ = strings.ToLower(strings.TrimSpace(typ)); typ != "" {
							v.types = append(v.types, typ)
						}
					}
				}
			}
		case xml.CharData:
			text.Write(t)
		case xml.EndElement:
			if t.Name.Local == "Duration" && slices.Contains(path, "Linear") && v.kind == "inline" && v.durText == "" {
				v.durText = strings.TrimSpace(text.String())
			}
			path = path[:len(path)-1]
		}
	}
	if v.version == "" || v.kind == "" {
		return vastDoc{}
	}
	v.ok = true
	if v.durText != "" {
		var h, m int
		var s float64
		if n, _ := fmt.Sscanf(v.durText, "%d:%d:%f", &h, &m, &s); n == 3 && m < 60 && s < 60 {
			v.dur = h*3600 + m*60 + int(math.Floor(s+0.5))
		}
	}
	return v
}

// vastCode maps a VAST version and kind to its AdCOM code (0: none).
func vastCode(version, kind string) int {
	major, minor, _ := strings.Cut(version, ".")
	minor, _, _ = strings.Cut(minor, ".")
	inline := map[string]int{"1": 1, "2": 2, "3": 3, "4.0": 7, "4": 7, "4.1": 11, "4.2": 13, "4.3": 15}
	key := major
	if major == "4" && minor != "" {
		key = "4." + minor
	}
	code := inline[key]
	if code == 0 || kind == "inline" {
		return code
	}
	return map[int]int{1: 4, 2: 5, 3: 6, 7: 8, 11: 12, 13: 14, 15: 16}[code]
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// ctvOptions are the pod gate's options.
type ctvOptions struct {
	podFitAll bool
	exclusive []string // adomain, cat
}

// verdict is the first failure of a bid: gate and reason; zero: passed.
type verdict struct{ gate, reason string }

// judgeVideo is videoCompliance on one bid (default options).
func judgeVideo(imp *ctvImpJSON, b *ctvBid) string {
	v := imp.Video
	if v == nil || (b.MType != 2 && b.MType != 0) {
		return ""
	}
	x := readVAST(b.Adm)
	if b.Dur < 0 {
		return "bid duration is negative"
	}
	if b.Dur > 0 && x.dur > 0 && b.Dur != x.dur {
		return fmt.Sprintf("dur %d does not match VAST duration %d", b.Dur, x.dur)
	}
	d := b.Dur
	if d <= 0 {
		d = x.dur
	}
	if d > 0 {
		if len(v.RqdDurs) > 0 {
			if !slices.Contains(v.RqdDurs, d) {
				return fmt.Sprintf("creative duration %ds not in rqddurs %s", d, joinInts(v.RqdDurs))
			}
		} else if v.MinDuration > 0 && d < v.MinDuration {
			return fmt.Sprintf("creative duration %ds below minduration %d", d, v.MinDuration)
		} else if v.MaxDuration > 0 && d > v.MaxDuration {
			return fmt.Sprintf("creative duration %ds above maxduration %d", d, v.MaxDuration)
		}
	}
	protos := v.Protocols
	if len(protos) == 0 && v.Protocol > 0 {
		protos = []int{v.Protocol}
	}
	if len(protos) > 0 {
		if x.ok && !slices.Contains(protos, vastCode(x.version, x.kind)) {
			return fmt.Sprintf("VAST %s %s not in protocols %s", x.version, x.kind, joinInts(protos))
		}
		if b.Protocol > 0 && !slices.Contains(protos, b.Protocol) {
			return fmt.Sprintf("protocol %d not in protocols %s", b.Protocol, joinInts(protos))
		}
	}
	if len(v.Mimes) > 0 && len(x.types) > 0 {
		listed := slices.ContainsFunc(x.types, func(t string) bool {
			return slices.ContainsFunc(v.Mimes, func(m string) bool { return strings.EqualFold(strings.TrimSpace(m), t) })
		})
		if !listed {
			return "MediaFile type " + x.types[0] + " not in mimes"
		}
	}
	if v.MinCPMPerSec > 0 && d > 0 {
		floor := math.Round(v.MinCPMPerSec * float64(d) * 1e6)
		if math.Round(b.Price*1e6) < floor {
			return fmt.Sprintf("bid price %g below floor %g (mincpmpersec %g x %ds)", b.Price, floor/1e6, v.MinCPMPerSec, d)
		}
	}
	return ""
}

// kept is a bid podCompliance has passed.
type kept struct {
	id, imp      string
	adomain, cat []string
}

func domainShared(a, b string) bool {
	return a == b || strings.HasSuffix(a, "."+b) || strings.HasSuffix(b, "."+a)
}

func catShared(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	return a == b || strings.HasPrefix(a, b+"-") || strings.HasPrefix(b, a+"-")
}

// judgeCTV judges every bid of resp against req with videoCompliance
// (defaults) and then podCompliance (o), in response order: a bid either
// gate fails takes no place in its pod. It returns the verdict per adid.
func judgeCTV(t *testing.T, req, resp []byte, o ctvOptions) map[string]verdict {
	t.Helper()
	var rq struct{ Imp []ctvImpJSON }
	require.NoError(t, json.Unmarshal(req, &rq))
	var rs struct {
		Seatbid []struct{ Bid []ctvBid }
	}
	require.NoError(t, json.Unmarshal(resp, &rs))
	imps := map[string]*ctvImpJSON{}
	for i := range rq.Imp {
		imps[rq.Imp[i].ID] = &rq.Imp[i]
	}
	out := map[string]verdict{}
	count, sum := map[string]int{}, map[string]int{}
	pods := map[string][]kept{}
	for _, sb := range rs.Seatbid {
		for _, b := range sb.Bid {
			imp := imps[b.ImpID]
			require.NotNil(t, imp, "bid %s names imp %s", b.AdID, b.ImpID)
			if r := judgeVideo(imp, &b); r != "" {
				out[b.AdID] = verdict{"rtb.video-compliance", r}
				continue
			}
			if r := judgePod(imp, &b, o, count, sum, pods); r != "" {
				out[b.AdID] = verdict{"rtb.pod-compliance", r}
				continue
			}
			out[b.AdID] = verdict{}
		}
	}
	return out
}

func judgePod(imp *ctvImpJSON, b *ctvBid, o ctvOptions, count, sum map[string]int, pods map[string][]kept) string {
	if !imp.inPod() {
		return ""
	}
	v := imp.Video
	positions := map[int][]string{1: {"first"}, -1: {"last"}, 2: {"first", "last"}}
	if b.SlotInPod != 0 {
		guaranteed := positions[v.SlotInPod]
		if !slices.ContainsFunc(positions[b.SlotInPod], func(p string) bool { return slices.Contains(guaranteed, p) }) {
			return fmt.Sprintf("slotinpod %d not guaranteed by imp %s (slotinpod %d)", b.SlotInPod, imp.ID, v.SlotInPod)
		}
	}
	d := b.Dur
	if d <= 0 {
		d = readVAST(b.Adm).dur
	}
	if imp.dynamic() {
		if o.podFitAll {
			if v.MaxSeq > 0 && count[imp.ID]+1 > v.MaxSeq {
				return fmt.Sprintf("pod of imp %s exceeds maxseq %d", imp.ID, v.MaxSeq)
			}
			if v.PodDur > 0 && sum[imp.ID]+d > v.PodDur {
				return fmt.Sprintf("pod of imp %s exceeds poddur %ds (%ds)", imp.ID, v.PodDur, sum[imp.ID]+d)
			}
		} else if v.PodDur > 0 && d > v.PodDur {
			return fmt.Sprintf("pod of imp %s exceeds poddur %ds (%ds)", imp.ID, v.PodDur, d)
		}
	}
	pod := v.PodID
	if pod == "" {
		pod = "imp:" + imp.ID
	}
	canPlay := func(k kept) bool { return k.imp != imp.ID || (imp.dynamic() && v.MaxSeq != 1) }
	for _, field := range o.exclusive {
		values, shared := b.ADomain, domainShared
		if field == "cat" {
			values, shared = b.Cat, catShared
		}
		for _, val := range values {
			for _, k := range pods[pod] {
				other := k.adomain
				if field == "cat" {
					other = k.cat
				}
				if canPlay(k) && slices.ContainsFunc(other, func(x string) bool { return shared(val, x) }) {
					return fmt.Sprintf("competitive separation: %s %s shared with bid %s", field, val, k.id)
				}
			}
		}
	}
	count[imp.ID]++
	sum[imp.ID] += d
	pods[pod] = append(pods[pod], kept{id: b.ID, imp: imp.ID, adomain: b.ADomain, cat: b.Cat})
	return ""
}

// optionsFor are the pod options a kind needs to be bad.
func optionsFor(k *kind) ctvOptions {
	switch k.needs {
	case "podFit: all":
		return ctvOptions{podFitAll: true}
	case "exclusive: [adomain]":
		return ctvOptions{exclusive: []string{"adomain"}}
	case "exclusive: [cat]":
		return ctvOptions{exclusive: []string{"cat"}}
	}
	return ctvOptions{}
}

var strictest = ctvOptions{podFitAll: true, exclusive: []string{"adomain", "cat"}}

// videoKindReasons is a part of the reason each video and pod kind is
// rejected with.
var videoKindReasons = map[string]string{
	"video-negative-dur": "bid duration is negative", "video-dur-mismatch": "does not match VAST duration",
	"video-dur-rqddurs": "not in rqddurs", "video-dur-range": "maxduration", "video-protocol": "not in protocols",
	"video-bid-protocol": "protocol ", "video-mime": "MediaFile type", "video-below-floor": "below floor",
	"pod-slot": "not guaranteed by imp", "pod-too-long": "exceeds poddur", "pod-overfill": "exceeds maxseq",
	"pod-adomain": "competitive separation: adomain", "pod-cat": "competitive separation: cat",
}

// TestVideoKindsAreBad: on the CTV and display sample requests, each
// video and pod kind on every imp it applies to is the one bid the rules
// fail, for the kind's gate; every other bid passes even under the
// strictest pod options; a kind that needs an option passes without it.
func TestVideoKindsAreBad(t *testing.T) {
	ctv, err := sampleCTVRequest()
	require.NoError(t, err)
	display, err := sampleRequest()
	require.NoError(t, err)
	for _, req := range [][]byte{ctv, display} {
		resp, err := samplePair(req, nil)
		require.NoError(t, err)
		for id, v := range judgeCTV(t, req, resp, strictest) {
			require.Zero(t, v, "valid bid %s", id)
		}
	}
	reasons := videoKindReasons
	for _, k := range videoKinds {
		require.True(t, k.pending, "%s: its gate is not in the default policy", k.name)
		tried := 0
		for _, req := range [][]byte{ctv, display} {
			var rq struct{ Imp []json.RawMessage }
			require.NoError(t, json.Unmarshal(req, &rq))
			for imp := range rq.Imp {
				resp, err := samplePairOn(req, k, imp)
				if err != nil {
					continue
				}
				tried++
				for _, o := range []ctvOptions{optionsFor(k), strictest} {
					bad := 0
					for id, v := range judgeCTV(t, req, resp, o) {
						if !strings.HasPrefix(id, k.tag+"-") {
							require.Zero(t, v, "kind %s on imp %d: bid %s is valid", k.name, imp, id)
							continue
						}
						bad++
						require.Equal(t, k.gate, v.gate, "kind %s on imp %d: %s", k.name, imp, v.reason)
						require.Contains(t, v.reason, reasons[k.name], "kind %s on imp %d", k.name, imp)
					}
					require.Equal(t, 1, bad, "kind %s on imp %d: one bad bid", k.name, imp)
				}
				if k.needs != "" {
					for id, v := range judgeCTV(t, req, resp, ctvOptions{}) {
						require.Zero(t, v, "kind %s passes without %s (bid %s)", k.name, k.needs, id)
					}
				}
			}
		}
		require.NotZero(t, tried, "kind %s applies to no imp of the sample requests", k.name)
	}
}

// TestVideoMixProperty: many CTV answers of 1-30 bids with a 30% mix of
// the video and pod kinds over many seats: under the strictest pod
// options, every bid tagged bad fails for its kind's gate and every valid
// bid passes.
func TestVideoMixProperty(t *testing.T) {
	reqs, err := generateRequests(genOptions{count: 50, impsLo: 1, impsHi: 8, tmaxLo: 300, tmaxHi: 300, ctv: 1, seed: 11})
	require.NoError(t, err)
	bids, err := parseCountDist("1-30", "imps")
	require.NoError(t, err)
	shape := bidShape{bids: bids, seats: 50}
	m := newMix(0.3, videoKinds)
	b := newBuilder(new(atomic.Uint64), priceNoise{median: 1.5, sigma: 0.5, seed: 3}, shape.seats)
	var (
		p    fastjson.Parser
		info reqInfo
		pl   plan
	)
	gates := map[string]string{}
	for _, k := range videoKinds {
		gates[k.tag] = k.gate
	}
	var nbad, nok int
	for n, req := range reqs {
		for round := range 4 {
			require.NoError(t, info.parse(&p, req))
			b.seed(uint64(n*4 + round))
			shape.layout(&info, &pl, b.rng)
			m.draw(&info, &pl, b.rng, func(*kind) {})
			resp := b.build(nil, &info, &pl)
			require.NotEmpty(t, resp)
			for id, v := range judgeCTV(t, req, resp, strictest) {
				tag, ok := splitTag([]byte(id))
				require.True(t, ok, id)
				if string(tag) == tagOK {
					nok++
					require.Zero(t, v, "request %d: valid bid %s", n, id)
					continue
				}
				nbad++
				require.Equal(t, gates[string(tag)], v.gate, "request %d: bid %s", n, id)
			}
		}
	}
	require.Greater(t, nbad, 200)
	require.Greater(t, nok, 1000)
}

// TestGenerateCTVRequests: -gen-ctv makes about its share of CTV requests
// (an app on a connected TV, video imps only) holding every break shape,
// and none without it.
func TestGenerateCTVRequests(t *testing.T) {
	reqs, err := generateRequests(genOptions{count: 400, impsLo: 1, impsHi: 6, tmaxLo: 100, tmaxHi: 200, ctv: 0.5, seed: 4})
	require.NoError(t, err)
	ctv := 0
	shapes := map[string]bool{}
	for _, body := range reqs {
		var r struct {
			App    map[string]any
			Site   map[string]any
			Device struct{ DeviceType int }
			Imp    []ctvImpJSON
		}
		require.NoError(t, json.Unmarshal(body, &r))
		if r.App == nil {
			require.NotNil(t, r.Site)
			continue
		}
		ctv++
		require.Nil(t, r.Site)
		require.Equal(t, 3, r.Device.DeviceType, "a connected TV")
		pods := map[string][]*ctvImpJSON{}
		for i := range r.Imp {
			imp := &r.Imp[i]
			require.NotNil(t, imp.Video, "video imps only")
			require.Nil(t, imp.Banner)
			require.NotEmpty(t, imp.Video.Protocols)
			require.NotEmpty(t, imp.Video.Mimes)
			if imp.Video.PodID == "" {
				require.False(t, imp.inPod())
				shapes["instream"] = true
				continue
			}
			pods[imp.Video.PodID] = append(pods[imp.Video.PodID], imp)
		}
		for _, imps := range pods {
			dynamic := slices.ContainsFunc(imps, (*ctvImpJSON).dynamic)
			switch {
			case len(imps) == 3 && !dynamic:
				shapes["structured"] = true
			case len(imps) == 1 && dynamic:
				shapes["dynamic"] = true
			case len(imps) == 2 && dynamic:
				shapes["hybrid"] = true
			default:
				t.Fatalf("unexpected pod %+v", imps)
			}
		}
	}
	require.InDelta(t, 200, ctv, 40)
	require.Len(t, shapes, 4, "structured, dynamic, hybrid and instream breaks")

	plain, err := generateRequests(genOptions{count: 50, impsLo: 1, impsHi: 3, tmaxLo: 100, tmaxHi: 200, seed: 4})
	require.NoError(t, err)
	for _, body := range plain {
		require.NotContains(t, string(body), `"app"`)
	}
}

// TestAudioAnswer: an audio imp gets mtype 3, a duration within its
// bounds and VAST with a MediaFile of its MIME type in a listed version.
func TestAudioAnswer(t *testing.T) {
	req := []byte(`{"id":"a1","imp":[{"id":"1","audio":{"mimes":["audio/MP4"],"protocols":[3,6],"minduration":20,"maxduration":40,"mincpmpersec":0.1},"bidfloor":1}]}`)
	resp, err := samplePair(req, nil)
	require.NoError(t, err)
	var rs struct{ Seatbid []struct{ Bid []ctvBid } }
	require.NoError(t, json.Unmarshal(resp, &rs))
	b := rs.Seatbid[0].Bid[0]
	require.Equal(t, 3, b.MType)
	require.Equal(t, 20, b.Dur, "15 s raised to minduration")
	require.GreaterOrEqual(t, b.Price, 2.0, "mincpmpersec x dur")
	v := readVAST(b.Adm)
	require.True(t, v.ok)
	require.Equal(t, "3.0", v.version)
	require.Equal(t, "inline", v.kind)
	require.Equal(t, 20, v.dur)
	require.Equal(t, []string{"audio/mp4"}, v.types)
}
