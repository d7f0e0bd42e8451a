// Package testserve runs `bidguard serve` for tests: it builds the binary
// once per test binary (per set of build flags), starts it as a child
// process, waits for its start-up banner (the `msg=serving ... listen=...
// admin=...` log line on stderr) and for /readyz, and stops it with
// SIGTERM within a bound. Buffer and WaitBanner also serve tests that run
// serve in process.
//
// Test code only: no production package may import it (cmd/bidguard's
// dependency test checks).
package testserve
