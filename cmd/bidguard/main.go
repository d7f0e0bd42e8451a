// Command bidguard is the OpenRTB bid-response validation sidecar.
//
//	bidguard serve [--config FILE] [--listen ADDR] [--admin ADDR] [--upstream URL] [--demo]
//	bidguard check --request REQ.json --response RESP.json [--config FILE] [--elapsed-ms N] [--latency-ms N] [--all] [--audit FILE]
//	bidguard replay --config FILE [--baseline FILE] [--json] [--html FILE] FILE|DIR...
//	bidguard config validate [--config FILE]
//	bidguard audit verify [--key-file FILE] [--anchor SEQ:MAC]... FILE...
//	bidguard version [--config FILE]
//
// Flags are parsed here only; every other package takes values.
package main

import (
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `usage:
  bidguard serve [--config FILE] [--listen ADDR] [--admin ADDR] [--upstream URL] [--demo]
  bidguard check --request REQ.json --response RESP.json [--config FILE] [--elapsed-ms N] [--latency-ms N] [--all] [--audit FILE]
  bidguard replay --config FILE [--baseline FILE] [--json] [--html FILE] FILE|DIR...
  bidguard config validate [--config FILE]
  bidguard audit verify [--key-file FILE] [--anchor SEQ:MAC]... FILE...
  bidguard version [--config FILE]
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return runServe(args[1:], stdout, stderr)
	case "check":
		return runCheck(args[1:], stdout, stderr)
	case "replay":
		return runReplay(args[1:], stdout, stderr)
	case "config":
		if len(args) > 1 && args[1] == "validate" {
			return runValidate(args[2:], stdout, stderr)
		}
	case "audit":
		return runAudit(args[1:], stdout, stderr)
	case "version":
		return runVersion(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "bidguard: unknown command %q\n%s", args[0], usage)
	return 2
}
