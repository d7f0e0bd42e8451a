//go:build !linux

package engine_test

// atNice does nothing: only Linux sets the priority of one thread.
func atNice(int) {}
