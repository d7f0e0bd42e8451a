package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

const usage = `usage:
  loadtest attack -target URL [flags]   constant-rate (open) or closed-loop load, JSON lines out
  loadtest bidder [flags]               a fake OpenRTB bidder with latency and a bad-bid mix
  loadtest report [flags] RESULTS...    text or JSON report, HTML plots
  loadtest seats -n N -out DIR          a seatsDir of N seat files (seat-00001...), one gate option each
Run "loadtest <command> -h" for the flags of a command.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a command line and returns the exit status: 0 success, 1 a
// failed run (a bad bid reached the client, the target refused), 2 bad
// usage.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "attack":
		return runAttack(args[1:], stdout, stderr)
	case "bidder":
		return runBidder(args[1:], stdout, stderr)
	case "report":
		return runReport(args[1:], stdout, stderr)
	case "seats":
		return runSeats(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "loadtest: unknown command %q\n%s", args[0], usage)
	return 2
}

// newFlags returns a flag set that reports errors to stderr and never exits.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("loadtest "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
