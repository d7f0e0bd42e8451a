package rtb

import "github.com/VictoriaMetrics/metrics"

// headerDrop is why an exchange header was not forwarded:
// bidguard_upstream_headers_dropped_total{reason}.
type headerDrop uint8

const (
	dropCount   headerDrop = iota // over headers.maxCount
	dropSize                      // over headers.maxBytes
	dropInvalid                   // a value with control or non-ASCII bytes
	numHeaderDrops
)

var headerDropNames = [numHeaderDrops]string{"count", "size", "invalid"}

// forwardMeters are one upstream's series of the request forwarding,
// the TLS client, the circuit breaker and compressed answers. They are
// created when a snapshot naming the upstream is installed.
type forwardMeters struct {
	dropped [numHeaderDrops]*metrics.Counter
	// handshake measures TLS handshakes of new connections; resumed counts
	// those that resumed a session.
	handshake *histogram
	resumed   *metrics.Counter
	// breaker is bidguard_upstream_breaker_state: 0 closed, 1 open, 2 half-open.
	breaker *metrics.Gauge
	// gzipped counts answers sent compressed.
	gzipped *metrics.Counter
}

func (m *meters) forward(name string) *forwardMeters {
	f := &forwardMeters{}
	for i := range f.dropped {
		f.dropped[i] = m.set.GetOrCreateCounter(series("bidguard_upstream_headers_dropped_total", "upstream", name, "reason", headerDropNames[i]))
	}
	f.handshake = m.handshakeDur.get(name)
	f.resumed = m.set.GetOrCreateCounter(series("bidguard_upstream_tls_resumed_total", "upstream", name))
	f.breaker = m.set.GetOrCreateGauge(series("bidguard_upstream_breaker_state", "upstream", name), nil)
	f.gzipped = m.set.GetOrCreateCounter(series("bidguard_answers_gzipped_total", "upstream", name))
	return f
}
