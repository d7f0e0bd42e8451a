// Package testbidder is the fake bidder of bidguard's tests: one loopback
// listener that either serves an http.HandlerFunc with net/http (HTTP) or
// runs a script on each raw connection (Raw), tracks its connections,
// records what it read (method, target, headers, body), and stops when the
// test ends. Options add TLS, a keep-alive idle timeout and a latency.
//
// Test code only: no production package may import it (cmd/bidguard's
// dependency test checks).
package testbidder
