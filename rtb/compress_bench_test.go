package rtb

import (
	"bytes"
	"fmt"
	"net"
	"testing"
)

// BenchmarkGzipAnswer is the cost of gzipping an answer (setAnswer) by
// size: ns/KB is the figure to weigh against compressAbove, cpu-ns/KB the
// same in process CPU time (what it is on a shared, loaded host, where
// wall time includes waiting for a core); ratio is the compressed size
// over the original. The answers are the typical response repeated, so
// they compress like real bid answers (markup, repeated keys).
func BenchmarkGzipAnswer(b *testing.B) {
	up := testUpstream(b, "    compressAbove: 1\n")
	ctx := parsedCtx(b, "POST /bid HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nAccept-Encoding: gzip\r\n\r\n", &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1)})
	unit := readFile(b, "typical-response.json")
	for _, kb := range []int{1, 4, 16, 64} {
		answer := bytes.Repeat(unit, kb*1024/len(unit)+1)[:kb*1024]
		b.Run(fmt.Sprintf("%dKB", kb), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(answer)))
			cpu0 := processCPU()
			for b.Loop() {
				up.setAnswer(ctx, answer)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(kb), "ns/KB")
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N)/float64(kb), "cpu-ns/KB")
			b.ReportMetric(float64(len(ctx.Response.Body()))/float64(len(answer)), "ratio")
		})
	}
}
