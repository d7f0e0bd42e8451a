//go:build unix

package quarantine

import (
	"fmt"
	"testing"
)

// benchDetector has 100 warm seats with steady traffic.
func benchDetector(b *testing.B) *Detector {
	s := newSim(&testing.T{}, defaultSettings(), steadySeats(100)...)
	s.run(3*60e9, 1e9, nil)
	return s.d
}

// BenchmarkObserve is the detector's per-bid cost on the bid path: finding
// the seat and observing a bid with a crid and one adomain.
func BenchmarkObserve(b *testing.B) {
	d := benchDetector(b)
	bid := Bid{Price: 1.5, HasPrice: true, CRID: "cr-7", ADomain: []string{"brand-2.com"}}
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		d.Seat("dsp-a", "s42").Observe(&bid)
	}
}

// BenchmarkObserveParallel is the same from every P, on ten seats.
func BenchmarkObserveParallel(b *testing.B) {
	d := benchDetector(b)
	seats := make([]string, 10)
	for i := range seats {
		seats[i] = fmt.Sprintf("s%d", i*7)
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		bid := Bid{Price: 1.5, HasPrice: true, CRID: "cr-7", ADomain: []string{"brand-2.com"}}
		i := 0
		for pb.Next() {
			d.Seat("dsp-a", seats[i%len(seats)]).Observe(&bid)
			i++
		}
	})
}

// BenchmarkQuarantined is the gate's question for a bid while some seat is
// quarantined.
func BenchmarkQuarantined(b *testing.B) {
	set := defaultSettings()
	set.Operator = []string{"other"}
	s := newSim(&testing.T{}, set, steadySeats(100)...)
	s.run(3*60e9, 1e9, nil)
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for b.Loop() {
		if s.d.Quarantined("dsp-a", "s42") != "" {
			b.Fatal("quarantined")
		}
	}
}

// BenchmarkTick is one tick over 1,000 seats (off the bid path).
func BenchmarkTick(b *testing.B) {
	s := newSim(&testing.T{}, defaultSettings(), steadySeats(1000)...)
	s.run(3*60e9, 1e9, nil)
	b.ReportAllocs()
	for b.Loop() {
		s.now = s.now.Add(1e9)
		s.d.Tick()
	}
}
