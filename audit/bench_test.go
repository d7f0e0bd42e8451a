package audit

import (
	"runtime"
	"testing"
)

// BenchmarkEnqueue is the bid path's cost of one record, from parallel
// producers, with the writer draining (fsync every 64 records).
func BenchmarkEnqueue(b *testing.B) {
	l := openLog(b, Options{Path: logPath(b)})
	defer l.Close()
	r := reject(1)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Enqueue(r)
		}
	})
}

// BenchmarkWriter is the writer's throughput: each op is one record
// encoded, MACed, written and (every 64) fsynced. The producer waits for
// room instead of dropping.
func BenchmarkWriter(b *testing.B) {
	l := openLog(b, Options{Path: logPath(b), Queue: 4096})
	r := reject(1)
	b.ReportAllocs()
	for b.Loop() {
		for !l.q.push(r, 0) {
			runtime.Gosched()
		}
		l.signal()
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkVerify is the verifier's cost per record.
func BenchmarkVerify(b *testing.B) {
	path := logPath(b)
	l := openLog(b, Options{Path: path})
	for range 10000 {
		for !l.Enqueue(reject(1)) {
		}
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := VerifyFiles([]string{path}, testKey, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10001, "ns/record")
}
