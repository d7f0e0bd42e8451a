//go:build !race

package gates

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSecureMarkupPassPathAllocatesNothing(t *testing.T) {
	req, err := os.ReadFile(filepath.Join("testdata", "typical-request.json"))
	require.NoError(t, err)
	resp, err := os.ReadFile(filepath.Join("testdata", "typical-response.json"))
	require.NoError(t, err)
	in, release := secureInput(t, req, resp)
	defer release()
	// The notice fields are judged without allocating; adm is read by
	// gates/markup's parsers, whose allocations gates/markup's tests bound.
	g := &secureMarkup{}
	for i := range in.Bids {
		in.Bids[i].AdM = ""
	}
	n := testing.AllocsPerRun(200, func() {
		if g.Prepare(in) != "" {
			t.Fatal("skipped")
		}
		for i := range in.Bids {
			if g.CheckBid(in, &in.Bids[i]).Failed() {
				t.Fatal("rejected")
			}
		}
	})
	require.Zero(t, n)
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = secureMarkupReject(4) }))
}
