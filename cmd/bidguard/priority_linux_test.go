package main

import (
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// nice is the nice value of the calling thread.
func nice(t *testing.T) int {
	t.Helper()
	p, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	require.NoError(t, err)
	return 20 - p
}

// A reload runs at reloadNice on a thread of its own; the caller's thread
// keeps its priority.
func TestAtLowPriority(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before := nice(t)
	var during int
	var tid int
	atLowPriority(func() {
		during = nice(t)
		tid = syscall.Gettid()
	})
	require.Equal(t, max(before, reloadNice), during)
	require.NotEqual(t, syscall.Gettid(), tid)
	require.Equal(t, before, nice(t))
}
