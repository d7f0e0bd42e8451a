// Command bidguard is the OpenRTB bid-response validation sidecar.
//
//	bidguard serve [--config FILE] [--listen ADDR] [--admin ADDR] [--upstream URL] [--demo]
//	bidguard check --request REQ.json --response RESP.json [--config FILE] [--elapsed-ms N] [--latency-ms N] [--all] [--audit FILE]
//	bidguard config validate [--config FILE]
//	bidguard audit verify [--key-file FILE] [--anchor SEQ:MAC]... FILE...
//	bidguard version [--config FILE]
//	bidguard --version
//
// Flags are parsed here only; every other package takes values.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
)

// version and revision are stamped at build time (make build, the
// Dockerfile): -ldflags "-X main.version=$(git describe --tags --always
// --dirty) -X main.revision=$(git rev-parse HEAD)". A plain go build leaves
// version "dev" and takes the revision from the VCS stamp Go embeds, if any.
var (
	version  = "dev"
	revision = ""
)

func init() {
	if revision != "" {
		return
	}
	revision = "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && s.Value != "" {
				revision = s.Value
			}
		}
	}
}

const usage = `usage:
  bidguard serve [--config FILE] [--listen ADDR] [--admin ADDR] [--upstream URL] [--demo]
  bidguard check --request REQ.json --response RESP.json [--config FILE] [--elapsed-ms N] [--latency-ms N] [--all] [--audit FILE]
  bidguard config validate [--config FILE]
  bidguard audit verify [--key-file FILE] [--anchor SEQ:MAC]... FILE...
  bidguard version [--config FILE]
  bidguard --version
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
	case "config":
		if len(args) > 1 && args[1] == "validate" {
			return runValidate(args[2:], stdout, stderr)
		}
	case "audit":
		return runAudit(args[1:], stdout, stderr)
	case "version":
		return runVersion(args[1:], stdout, stderr)
	case "--version", "-version":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "bidguard: %s takes no arguments\n%s", args[0], usage)
			return 2
		}
		fmt.Fprintf(stdout, "bidguard %s revision %s %s\n", version, revision, runtime.Version())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "bidguard: unknown command %q\n%s", args[0], usage)
	return 2
}
