package audit

import (
	"bytes"
	"errors"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// FuzzVerify: the verifier never panics and fails only with a BreakError on
// any input; a chain it accepts is exactly what the writer writes for the
// records it holds, and verifies again to the same summary. Seeds:
// testdata/fuzz/FuzzVerify (the golden chain and near misses).
func FuzzVerify(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		v := NewVerifier(testKey)
		err := v.File("fuzz", bytes.NewReader(data))
		if err != nil {
			var be *BreakError
			require.True(t, errors.As(err, &be), "%v", err)
			require.Positive(t, be.Line)
			return
		}
		sum := v.Summary()
		var recs []Record
		for _, line := range bytes.SplitAfter(data, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			var r Record
			_, err := parseLine(line, &r, nil)
			require.NoError(t, err)
			recs = append(recs, r)
		}
		w := writer{mac: newMacer(testKey), seq: recs[0].Seq - 1, prev: recs[0].Prev}
		for i := range recs {
			r := recs[i]
			r.V, r.Seq, r.Prev, r.MAC = 0, 0, [32]byte{}, [32]byte{}
			w.seal(&r)
		}
		require.Equal(t, string(data), string(w.buf), "an accepted chain is the writer's encoding")
		again := NewVerifier(testKey)
		require.NoError(t, again.File("fuzz", bytes.NewReader(data)))
		require.Equal(t, sum, again.Summary())
	})
}

// FuzzRecordRoundTrip: whatever strings a producer hands in, the line the
// writer makes parses back to the record it sealed (clipped, invalid UTF-8
// replaced) and its MAC verifies.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("req-1", "seat-a", "b1", "cr-1", "brand.com", "rtb.floor", "price \"1\" below\n\tfloor", "0123456789ab", int64(1500000), 300)
	f.Add("\xff", "\x00\x1f\x7f", "\u2028", "é", "", "\\", "\"", "", int64(-1), -7)
	f.Fuzz(func(t *testing.T, reqID, seat, bidID, crid, dom, gate, reason, policy string, price int64, nbr int) {
		q := newRing(1)
		in := &Record{TS: time.Unix(1_800_000_000, 42), Kind: KindReject, ReqID: reqID, Seat: seat, BidID: bidID, CRID: crid,
			ADomain: []string{dom, dom}, PriceMicros: price, Gate: gate, Reason: reason, NBR: nbr, Loss: nbr, Policy: policy}
		require.True(t, q.push(in, 0))
		var r Record
		q.peek(0).record(&r, nil)
		validUTF8(&r)
		w := writer{mac: newMacer(testKey)}
		w.seal(&r)
		var back Record
		_, err := parseLine(w.buf, &back, nil)
		require.NoError(t, err, "%q", w.buf)
		require.Equal(t, r.MAC, back.MAC)
		require.Equal(t, r.MAC, w.mac.sum(&back))
		if len(seat) <= MaxID && utf8.ValidString(seat) {
			require.Equal(t, seat, back.Seat, "a valid string within its limit is kept as it is")
		}
		if len(reason) <= MaxReason && utf8.ValidString(reason) {
			require.Equal(t, reason, back.Reason)
		}
	})
}
