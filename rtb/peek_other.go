//go:build !unix

package rtb

// peekFD cannot peek without blocking on this platform: report nothing and
// rely on the one resend of a request whose reused connection was closed.
func peekFD(uintptr) probeResult { return probeQuiet }
