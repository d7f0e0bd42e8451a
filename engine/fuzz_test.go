package engine_test

import (
	"encoding/json"
	"fmt"
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
// decoder and the default policy must never panic, whatever they accept,
// and a request that decodes decodes the same way again on a reused Eval,
// after another request (nothing of an earlier decode survives a reset).
func FuzzDecodeRequest(f *testing.F) {
	req, resp := readTypical(f)
	f.Add(req)
	f.Add([]byte(`{"id":"1","imp":[{"id":"1","pmp":{"deals":[{"id":"d","wadomain":["xn--zz"]}]}}],"regs":{"dsa":{"dsarequired":3},"ext":{"coppa":1}}}`))
	f.Add([]byte(`{"id":"1","imp":null,"tmax":-5,"cur":[],"bcat":[""],"cattax":99}`))
	snap := defaultSnapshot(f)
	decoded := func(ev *engine.Eval) string {
		b, err := json.Marshal(ev.In.Request)
		return fmt.Sprintf("%s %v dsa=%s", b, err, ev.In.RegsDSA)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, ev, err := engine.Check(snap, data, resp, engine.CheckOptions{LatencyMs: -1, All: true})
		if err != nil {
			return
		}
		engine.ReleaseEval(ev)
		ev = new(engine.Eval) // what the pool makes: never used before
		require.NoError(t, ev.DecodeRequest(data))
		first := decoded(ev)
		require.NoError(t, ev.DecodeRequest(req))
		require.NoError(t, ev.DecodeRequest(data), "decoded once, decodes again")
		require.Equal(t, first, decoded(ev), "decodes the same way twice")
	})
}
