// Package faults is bidguard's fault suite: tests against real `bidguard
// serve` processes on loopback, with scripted fake bidders and hostile or
// overloading clients. It imports no bidguard package: it talks HTTP to the
// binary TestMain builds (bin variants: plain, race-built, and built with
// the faultinject tag for injected panics).
//
// docs/reliability.md lists every scenario with its expected behaviour;
// TestScenarioList keeps the list and the tests in step. Fast scenarios run
// in `make test`; slow ones only with BIDGUARD_FAULTS=1 (`make faults`).
//
// After every scenario the harness checks that the process is alive, that
// its goroutine count came back to its baseline (go_goroutines on the admin
// /metrics), and, for traffic the scenario sent, that every answer arrived
// by the request's deadline within the stated tolerance and that no bid a
// gate rejects reached the exchange.
package faults
