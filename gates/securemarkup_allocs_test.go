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
	g := &secureMarkup{}
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

	// Every creative kind, the jstracker buffer coming from its pool; and a
	// rejection, whose reason is built once.
	for _, adm := range []string{bannerHTML, vast2, vast3Wrapper, vast4, native11, native12, `<img src="http://x">`} {
		b := []byte(adm)
		require.Zero(t, testing.AllocsPerRun(100, func() { insecureAdm(b) }), adm)
	}
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = secureMarkupReject(4) }))
}
