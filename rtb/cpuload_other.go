//go:build !linux

package rtb

// newCPUSource: off Linux the CPUs' use is not read, the share is unknown,
// and the governor cuts on its queue and tight signals alone.
func newCPUSource() cpuSource { return nil }
