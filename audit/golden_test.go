package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// goldenRecords are the records of the golden chains: every kind, a
// response-level rejection, strings that need escaping, two segments.
func goldenRecords() [][]Record {
	ts := func(i int) time.Time {
		return time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC).Add(time.Duration(i) * time.Second)
	}
	const policy = "0123456789ab"
	return [][]Record{{
		{TS: ts(0), Kind: KindSegment, Reason: "1"},
		{TS: ts(1), Kind: KindConfig, Policy: policy, Reason: "startup: /etc/bidguard/bidguard.yaml"},
		{TS: ts(2), Kind: KindReject, ReqID: "req-1", Seat: "seat-a", BidID: "b2", CRID: "cr-9", ADomain: []string{"brand.com", "brand.net"},
			PriceMicros: 2_500_000, Gate: "rtb.impid-match", Reason: "bid impid not present in request", NBR: 300, Loss: 3, Policy: policy},
		{TS: ts(3), Kind: KindReject, ReqID: "req-2", Gate: "rtb.tmax-guard", Reason: "bidguard:timeout", NBR: 101, Loss: 2, Policy: policy},
		{TS: ts(4), Kind: KindShadow, ReqID: "req-3", Seat: "seat-b", BidID: "b7", CRID: "c\"r\\7", ADomain: []string{}, PriceMicros: -1,
			Gate: "pii", Reason: "phone \"+1 555\" in adm\n\tü \u2028 \x01", NBR: 0, Loss: 0, Policy: policy},
		{TS: ts(5), Kind: KindGap, Reason: "3 records dropped"},
		{TS: ts(6), Kind: KindRecovered, Reason: "57 bytes truncated"},
		{TS: ts(7), Kind: KindQuarantine, Seat: "seat-c", Reason: "rejection rate 0.93 over 0.5", Policy: policy},
		{TS: ts(8), Kind: KindRelease, Seat: "seat-c", Reason: "operator", Policy: policy},
	}, {
		{TS: ts(9), Kind: KindSegment, Reason: "2"},
		{TS: ts(10), Kind: KindReject, ReqID: "req-4", Seat: "seat-a", BidID: "b1", CRID: "cr-1", ADomain: []string{"brand.com"},
			PriceMicros: 10, Gate: "rtb.floor", Reason: "price 0.00001 below floor 0.5", NBR: 301, Loss: 100, Policy: policy},
	}}
}

// sealGolden encodes the golden records as the writer does.
func sealGolden(key []byte) [][]byte {
	w := writer{mac: newMacer(key)}
	var out [][]byte
	for _, seg := range goldenRecords() {
		for i := range seg {
			w.seal(&seg[i])
		}
		out = append(out, bytes.Clone(w.buf))
		w.buf = w.buf[:0]
	}
	return out
}

// goldenDirs are the committed golden chains and their keys.
var goldenDirs = map[string][]byte{"testdata/golden-hmac": testKey, "testdata/golden-sha256": nil}

// TestGoldenVectors: a fixed key and fixed records give the committed
// lines, macs included, and the committed chains verify.
func TestGoldenVectors(t *testing.T) {
	for dir, key := range goldenDirs {
		for i, want := range sealGolden(key) {
			have, err := os.ReadFile(SegmentName(filepath.Join(dir, "audit.log"), i+1))
			require.NoError(t, err)
			require.Equal(t, string(have), string(want), "%s segment %d", dir, i+1)
		}
		sum, err := VerifyFiles([]string{filepath.Join(dir, "audit.log")}, key, nil)
		require.NoError(t, err, dir)
		require.Equal(t, uint64(11), sum.Records)
		require.Equal(t, 2, sum.Segments)
		require.Equal(t, 1, sum.Gaps)
		require.Equal(t, uint64(3), sum.Dropped)
		require.Equal(t, uint64(57), sum.Truncated)
		require.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC), sum.First)
		require.Equal(t, time.Date(2026, 1, 2, 3, 4, 15, 123456789, time.UTC), sum.Last)
	}
}

// TestGoldenEncoding computes the mac of one golden record from the
// encoding as doc.go describes it, independently of appendMACInput.
func TestGoldenEncoding(t *testing.T) {
	var in bytes.Buffer
	str := func(s string) {
		require.NoError(t, binary.Write(&in, binary.BigEndian, uint32(len(s))))
		in.WriteString(s)
	}
	i64 := func(v int64) { require.NoError(t, binary.Write(&in, binary.BigEndian, v)) }
	prev := mustHex(t, "337352cccfa42c80e6aa4f4e7c0c0fae1a79e53ab44e0af4ecbdf89725a1a3bf")
	str("bidguard.audit.v1")
	i64(1)                                                                     // v
	i64(3)                                                                     // seq
	i64(time.Date(2026, 1, 2, 3, 4, 7, 0, time.UTC).Unix())                    // ts seconds
	require.NoError(t, binary.Write(&in, binary.BigEndian, uint32(123456789))) // ts nanoseconds
	for _, s := range []string{"reject", "req-1", "seat-a", "b2", "cr-9"} {    // kind, req_id, seat, bid_id, crid
		str(s)
	}
	require.NoError(t, binary.Write(&in, binary.BigEndian, uint32(2))) // adomain count
	str("brand.com")
	str("brand.net")
	i64(2_500_000) // price_micros
	str("rtb.impid-match")
	str("bid impid not present in request")
	i64(300) // nbr
	i64(3)   // loss
	str("0123456789ab")
	in.Write(prev)

	h := hmac.New(sha256.New, testKey)
	h.Write(in.Bytes())
	require.Equal(t, "e472c9557eeb76f75e1dbe217e4318c6dc0be3c94d8fff0a440a8b0f8af953de", hex.EncodeToString(h.Sum(nil)))
	recs := readRecords(t, "testdata/golden-hmac/audit.log")
	require.Equal(t, "e472c9557eeb76f75e1dbe217e4318c6dc0be3c94d8fff0a440a8b0f8af953de", hex.EncodeToString(recs[2].MAC[:]))
}

func mustHex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}
