package rtb

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/configs"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
)

// manyBids returns the typical response with its three bids repeated to n
// bids (unique ids, the same imps): about 550 bytes a bid.
func manyBids(t testing.TB, n int) []byte {
	t.Helper()
	var r struct {
		ID      string `json:"id"`
		BidID   string `json:"bidid"`
		Cur     string `json:"cur"`
		SeatBid []struct {
			Seat string                       `json:"seat"`
			Bid  []map[string]json.RawMessage `json:"bid"`
		} `json:"seatbid"`
	}
	require.NoError(t, json.Unmarshal(readFile(t, "typical-response.json"), &r))
	var proto []map[string]json.RawMessage
	for _, sb := range r.SeatBid {
		proto = append(proto, sb.Bid...)
	}
	r.SeatBid = r.SeatBid[:1]
	r.SeatBid[0].Bid = nil
	for i := range n {
		b := map[string]json.RawMessage{}
		for k, v := range proto[i%len(proto)] {
			b[k] = v
		}
		b["id"] = json.RawMessage(fmt.Sprintf(`"bid-%d"`, i))
		r.SeatBid[0].Bid = append(r.SeatBid[0].Bid, b)
	}
	out, err := json.Marshal(r)
	require.NoError(t, err)
	return out
}

func defaultSnapshot(t testing.TB) *engine.Snapshot {
	t.Helper()
	cfg, err := engine.ParseConfig(configs.DefaultName, configs.Default)
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, configs.DefaultName, configs.Default, gates.Builtin())
	require.NoError(t, err)
	return snap
}

// BenchmarkJudgeCost is what the bid path spends on a bidder's answer after
// reading it: decode, the default policy, the answer's encoding. Its ns/byte
// metric is the source of the judging cost model's seed (judgeNsPerByte).
func BenchmarkJudgeCost(b *testing.B) {
	snap := defaultSnapshot(b)
	req := readFile(b, "typical-request.json")
	for _, n := range []int{3, 30, 300, 999} {
		resp := manyBids(b, n)
		b.Run(fmt.Sprintf("bids=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(resp)))
			for b.Loop() {
				ev := engine.AcquireEval()
				if err := ev.DecodeRequest(req); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				ev.SetDeadline(start, start.Add(time.Hour))
				if err := ev.DecodeResponse(resp, 1000); err != nil {
					b.Fatal(err)
				}
				ev.Run(snap, engine.RunOptions{})
				_ = bytes.Clone(ev.Body())
				engine.ReleaseEval(ev)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(resp)), "ns/byte")
		})
	}
}
