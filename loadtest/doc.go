// Package loadtest is the constant-rate load-test harness. It talks HTTP only
// and imports no bidguard package.
package loadtest
