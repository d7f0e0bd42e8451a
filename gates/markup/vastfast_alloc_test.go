//go:build !race

package markup

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVASTFastAllocatesNothing: once its pool is warm, the fast path reads
// well-formed VAST (pieces to join, references and CRs to decode
// included) and sniffs it without allocating.
func TestVASTFastAllocatesNothing(t *testing.T) {
	for _, doc := range []string{
		distinctVAST,
		vast42Inline,
		`<VAST version="4.2"><Ad><InLine><Impression> <![CDATA[https://x/a?b=1]]>&amp;c=2<Error>https://e/</Error>` + "\r\n" +
			`</Impression><MediaFile>https://x/&#x41;.mp4</MediaFile><CustomTracking>x</CustomTracking></InLine></Ad></VAST>`,
	} {
		b := []byte(doc)
		a := newAnalysis(DefaultLimits, true, true)
		require.True(t, a.readVASTFast(b, 0), doc)
		require.Zero(t, a.found, doc)
		require.False(t, a.insecure, doc)
		require.Zero(t, testing.AllocsPerRun(100, func() { a.readVAST(b, 0, false) }), doc)
		require.Zero(t, testing.AllocsPerRun(100, func() { looksLikeVAST(b) }), doc)
	}
}
