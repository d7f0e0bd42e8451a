//go:build !faultinject

package rtb

// injectUpstreamFault is a no-op: only binaries built with the faultinject
// tag (the fault suite's) can panic on purpose in the upstream call.
func injectUpstreamFault(string) {}
