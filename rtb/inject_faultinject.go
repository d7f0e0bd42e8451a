//go:build faultinject

package rtb

// FaultPanicUpstream is the upstream name whose calls panic in binaries
// built with the faultinject tag: the fault suite's way to prove that a
// panic in the upstream call is recovered, counted and answered 204.
const FaultPanicUpstream = "fault-panic"

func injectUpstreamFault(name string) {
	if name == FaultPanicUpstream {
		panic("faultinject: upstream call")
	}
}
