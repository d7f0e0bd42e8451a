//go:build !linux

package main

// atLowPriority runs fn: only Linux sets the priority of one thread.
func atLowPriority(fn func()) { fn() }
