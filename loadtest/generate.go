package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// genOptions shape generated bid requests.
type genOptions struct {
	count          int     // distinct requests
	impsLo, impsHi int     // imps per request
	sizeLo, sizeHi int     // body size in bytes, reached by padding site.keywords (0: no padding)
	tmaxLo, tmaxHi int     // tmax in ms
	coppa          float64 // share of child-directed requests (regs.coppa 1)
	dsa            float64 // share of requests requiring DSA transparency (dsarequired 2)
	ctv            float64 // share of CTV requests (an app on a TV, video imps in ad pods)
	seed           uint64
}

func (o genOptions) validate() error {
	switch {
	case o.count < 1 || o.count > maxRequests:
		return fmt.Errorf("-gen-count must be in 1..%d", maxRequests)
	case o.impsLo < 1 || o.impsHi > 20:
		return fmt.Errorf("-gen-imps must be within 1-20")
	case o.tmaxLo < 1:
		return fmt.Errorf("-gen-tmax must be >= 1")
	case o.sizeHi > 256<<10:
		return fmt.Errorf("-gen-size must be at most 256k")
	case o.coppa < 0 || o.coppa > 1 || o.dsa < 0 || o.dsa > 1 || o.ctv < 0 || o.ctv > 1:
		return fmt.Errorf("-gen-coppa, -gen-dsa and -gen-ctv are shares in [0, 1]")
	}
	return nil
}

// impTemplates are the imp shapes generated requests rotate through: the
// three of gates/testdata/typical-request.json and a native imp.
var impTemplates = []map[string]any{
	{"banner": map[string]any{"w": 300, "h": 250, "format": []any{map[string]any{"w": 300, "h": 250}, map[string]any{"w": 320, "h": 50}}, "battr": []int{1, 3}}, "bidfloor": 0.5, "bidfloorcur": "USD", "secure": 1, "tagid": "slot-top"},
	{"banner": map[string]any{"w": 728, "h": 90}, "bidfloor": 0.8, "secure": 1, "tagid": "slot-leader"},
	{"video": map[string]any{"mimes": []string{"video/mp4"}, "minduration": 5, "maxduration": 30, "protocols": []int{2, 3, 5, 6}, "w": 640, "h": 480, "battr": []int{6}}, "bidfloor": 2.0, "secure": 1},
	{"native": map[string]any{"request": `{"ver":"1.2","assets":[{"id":1,"required":1,"title":{"len":90}},{"id":2,"required":1,"img":{"type":3,"w":1200,"h":627}}]}`, "ver": "1.2", "battr": []int{2}}, "bidfloor": 1.0, "secure": 1},
}

// ctvBreaks are the ad breaks CTV requests rotate through, each a list of
// video imps (OpenRTB 2.6 implementation guide 7.6): a structured pod of
// three slots (first, any, last) of exactly 15 or 30 s, a dynamic pod of
// up to four ads in 60 s, a hybrid pod (a guaranteed first slot of 30 s
// and a dynamic rest of up to three ads in 90 s) and an instream video imp
// outside any pod. Every imp has a per-second floor above or near its
// floor, so per-second pricing shows.
var ctvBreaks = [][]map[string]any{
	{
		ctvImp(map[string]any{"slotinpod": 1, "rqddurs": []int{15, 30}}, structured),
		ctvImp(map[string]any{"slotinpod": 0, "rqddurs": []int{15, 30}}, structured),
		ctvImp(map[string]any{"slotinpod": -1, "rqddurs": []int{15, 30}}, structured),
	},
	{ctvImp(map[string]any{"poddur": 60, "maxseq": 4}, dynamicPod)},
	{
		ctvImp(map[string]any{"slotinpod": 1, "rqddurs": []int{30}}, hybrid),
		ctvImp(map[string]any{"poddur": 90, "maxseq": 3, "minduration": 5, "maxduration": 30}, hybrid),
	},
	{ctvImp(map[string]any{"minduration": 5, "maxduration": 30}, instream)},
}

// The media settings of each break: protocols, mimes, player size, floor
// and per-second floor.
var (
	structured = map[string]any{"protocols": []int{3, 6, 7, 8}, "mimes": []string{"video/mp4", "video/webm"}, "w": 1920, "h": 1080, "bidfloor": 5.0, "mincpmpersec": 0.5}
	dynamicPod = map[string]any{"protocols": []int{2, 3, 5, 6, 7, 8, 11, 13}, "mimes": []string{"video/mp4"}, "w": 1920, "h": 1080, "bidfloor": 2.0, "mincpmpersec": 0.2}
	hybrid     = map[string]any{"protocols": []int{7, 8, 11, 12}, "mimes": []string{"video/mp4", "application/x-mpegURL"}, "w": 1280, "h": 720, "bidfloor": 3.0, "mincpmpersec": 0.25}
	instream   = map[string]any{"protocols": []int{2, 3, 5, 6, 7, 8}, "mimes": []string{"video/mp4"}, "w": 1280, "h": 720, "bidfloor": 2.0}
)

// ctvImp is a video imp of a CTV break: the break's settings (floors go
// on the imp, the rest on its video) and the slot's own fields.
func ctvImp(slot, settings map[string]any) map[string]any {
	video := map[string]any{"startdelay": 0, "plcmt": 1, "linearity": 1}
	imp := map[string]any{"video": video, "bidfloorcur": "USD", "secure": 1}
	for k, v := range settings {
		if k == "bidfloor" {
			imp[k] = v
		} else {
			video[k] = v
		}
	}
	for k, v := range slot {
		video[k] = v
	}
	return imp
}

// ctvImps returns about n imps of CTV breaks, from break first on in turn
// (whole breaks: at least n imps), podids numbered per request.
func ctvImps(n, first int) []any {
	var imps []any
	for b := 0; len(imps) < n; b++ {
		brk := ctvBreaks[(first+b)%len(ctvBreaks)]
		for _, tmpl := range brk {
			imp := map[string]any{"id": fmt.Sprint(len(imps) + 1)}
			for k, v := range tmpl {
				imp[k] = v
			}
			video := map[string]any{}
			for k, v := range tmpl["video"].(map[string]any) {
				video[k] = v
			}
			if len(brk) > 1 || video["poddur"] != nil {
				video["podid"] = fmt.Sprintf("pod-%d", b+1)
			}
			imp["video"] = video
			imps = append(imps, imp)
		}
	}
	return imps
}

const padWords = "news sports weather finance travel food music movies science health technology culture "

// generateRequests returns o.count distinct bid requests.
func generateRequests(o genOptions) ([][]byte, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.seed, 0x6c6f6164))
	between := func(lo, hi int) int { return lo + rng.IntN(hi-lo+1) }
	out := make([][]byte, 0, o.count)
	for n := range o.count {
		imps := make([]any, between(o.impsLo, o.impsHi))
		first := rng.IntN(len(impTemplates))
		for i := range imps {
			imp := map[string]any{"id": fmt.Sprint(i + 1)}
			for k, v := range impTemplates[(first+i)%len(impTemplates)] {
				imp[k] = v
			}
			imps[i] = imp
		}
		site := map[string]any{"id": fmt.Sprintf("site-%d", n%50), "domain": fmt.Sprintf("news%d.publisher.com", n%10),
			"page": fmt.Sprintf("https://news%d.publisher.com/article/%d", n%10, n), "cat": []string{"IAB12"},
			"publisher": map[string]any{"id": "pub-1"}}
		device := map[string]any{"ua": "Mozilla/5.0 (Windows NT 10.0; Win64; x64)", "ip": "203.0.113.7", "devicetype": 2}
		ctv := o.ctv > 0 && rng.Float64() < o.ctv // no draw without CTV: display requests stay as they were
		regs := map[string]any{"coppa": 0}
		if rng.Float64() < o.coppa {
			regs["coppa"] = 1
		}
		if rng.Float64() < o.dsa {
			regs["ext"] = map[string]any{"dsa": map[string]any{"dsarequired": 2, "pubrender": 0, "datatopub": 1}}
		}
		req := map[string]any{
			"id": fmt.Sprintf("gen-%d-%d", o.seed, n), "imp": imps, "site": site, "device": device,
			"user": map[string]any{"id": fmt.Sprintf("user-%d", n)},
			"at":   1, "tmax": between(o.tmaxLo, o.tmaxHi), "cur": []string{"USD"},
			"bcat": []string{"IAB25", "IAB26", "IAB7-39"}, "badv": []string{"blocked-advertiser.com"},
			"bapp": []string{"com.blocked.app"}, "regs": regs,
		}
		if ctv {
			// An app on a connected TV (devicetype 3) with video imps in
			// ad breaks: the keywords padding goes on the app.
			delete(req, "site")
			site = map[string]any{"id": fmt.Sprintf("app-%d", n%50), "bundle": fmt.Sprintf("com.publisher.tv%d", n%10),
				"storeurl": fmt.Sprintf("https://apps.publisher.com/tv%d", n%10), "cat": []string{"IAB1"},
				"publisher": map[string]any{"id": "pub-1"}}
			req["app"] = site
			req["imp"] = ctvImps(len(imps), rng.IntN(len(ctvBreaks)))
			device["devicetype"], device["ua"] = 3, "Mozilla/5.0 (SMART-TV; Linux; Tizen 6.0) AppleWebKit/537.36 (KHTML, like Gecko) TV Safari/537.36"
		}
		body, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		if o.sizeHi > 0 {
			const overhead = len(`,"keywords":""`)
			if pad := between(o.sizeLo, o.sizeHi) - len(body) - overhead; pad > 0 {
				site["keywords"] = strings.Repeat(padWords, pad/len(padWords)+1)[:pad]
				if body, err = json.Marshal(req); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, body)
	}
	return out, nil
}
