package engine_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// FuzzDecodeAndJudge feeds arbitrary bytes as the bid response through the
// decoder and the default policy. It must never panic, and the body the
// sidecar would forward must decode again and pass every gate again.
func FuzzDecodeAndJudge(f *testing.F) {
	req, resp := readTypical(f)
	f.Add(resp)
	samples, _ := filepath.Glob("testdata/corpus/bid-response-*.json")
	for _, s := range samples {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"id":"req-typical-1","seatbid":[{"bid":[{"id":"x","impid":"1","price":1,"PRICE":-1,"price":2}]}]}`))
	f.Add([]byte(`{"id":"1","imp":[]}`))
	f.Add([]byte(`null`))
	snap := defaultSnapshot(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, ev, err := engine.Check(snap, req, data, engine.CheckOptions{LatencyMs: -1})
		if err != nil {
			return
		}
		engine.ReleaseEval(ev)
		if rep.Action == "no-bid" {
			return
		}
		again, ev2, err := engine.Check(snap, req, rep.Response, engine.CheckOptions{LatencyMs: -1})
		require.NoError(t, err, "the forwarded body must decode: %s", rep.Response)
		engine.ReleaseEval(ev2)
		require.True(t, again.Passed, "every forwarded bid passes again: %s", rep.Response)
		require.Equal(t, "forward", again.Action)
	})
}

// FuzzDecodeRequest feeds arbitrary bytes as the exchange's request: the
// decoder and the default policy must never panic, whatever they accept.
func FuzzDecodeRequest(f *testing.F) {
	req, resp := readTypical(f)
	f.Add(req)
	f.Add([]byte(`{"id":"1","imp":[{"id":"1","pmp":{"deals":[{"id":"d","wadomain":["xn--zz"]}]}}],"regs":{"dsa":{"dsarequired":3},"ext":{"coppa":1}}}`))
	f.Add([]byte(`{"id":"1","imp":null,"tmax":-5,"cur":[],"bcat":[""],"cattax":99}`))
	snap := defaultSnapshot(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, ev, err := engine.Check(snap, data, resp, engine.CheckOptions{LatencyMs: -1, All: true})
		if err == nil {
			engine.ReleaseEval(ev)
		}
	})
}
