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
	case o.coppa < 0 || o.coppa > 1 || o.dsa < 0 || o.dsa > 1:
		return fmt.Errorf("-gen-coppa and -gen-dsa are shares in [0, 1]")
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
		regs := map[string]any{"coppa": 0}
		if rng.Float64() < o.coppa {
			regs["coppa"] = 1
		}
		if rng.Float64() < o.dsa {
			regs["ext"] = map[string]any{"dsa": map[string]any{"dsarequired": 2, "pubrender": 0, "datatopub": 1}}
		}
		req := map[string]any{
			"id": fmt.Sprintf("gen-%d-%d", o.seed, n), "imp": imps, "site": site,
			"device": map[string]any{"ua": "Mozilla/5.0 (Windows NT 10.0; Win64; x64)", "ip": "203.0.113.7", "devicetype": 2},
			"user":   map[string]any{"id": fmt.Sprintf("user-%d", n)},
			"at":     1, "tmax": between(o.tmaxLo, o.tmaxHi), "cur": []string{"USD"},
			"bcat": []string{"IAB25", "IAB26", "IAB7-39"}, "badv": []string{"blocked-advertiser.com"},
			"bapp": []string{"com.blocked.app"}, "regs": regs,
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
