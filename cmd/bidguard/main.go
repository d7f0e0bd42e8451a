// Command bidguard is the OpenRTB bid-response validation sidecar.
//
//	bidguard serve [--config FILE] [--listen ADDR] [--admin ADDR] [--upstream URL] [--demo] [--pprof] [--log-level LEVEL] [--log-format FORMAT]
//	bidguard check --request REQ.json --response RESP.json [--config FILE] [--elapsed-ms N] [--latency-ms N] [--all] [--audit FILE]
//	bidguard replay --config FILE [--baseline FILE] [--json] [--html FILE] FILE|DIR...
//	bidguard config validate [--config FILE]
//	bidguard audit verify [--key-file FILE] [--anchor SEQ:MAC]... FILE...
//	bidguard version [--config FILE]
//	bidguard --version
//	bidguard help [COMMAND]
//
// Every command and subcommand takes -h (or a first argument help): its
// usage and flags on stdout, exit 0. A usage error is one line on stderr,
// exit 2. Flags are parsed here only; every other package takes values.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
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

// synopses are the commands' usage lines, in the order usage lists them.
var synopses = []struct{ name, line string }{
	{"serve", "bidguard serve [--config FILE] [--listen ADDR] [--admin ADDR] [--upstream URL] [--demo] [--pprof] [--log-level LEVEL] [--log-format FORMAT]"},
	{"check", "bidguard check --request REQ.json --response RESP.json [--config FILE] [--elapsed-ms N] [--latency-ms N] [--all] [--audit FILE]"},
	{"replay", "bidguard replay --config FILE [--baseline FILE] [--json] [--html FILE] FILE|DIR..."},
	{"config validate", "bidguard config validate [--config FILE]"},
	{"audit verify", "bidguard audit verify [--key-file FILE] [--anchor SEQ:MAC]... FILE..."},
	{"version", "bidguard version [--config FILE]"},
	{"--version", "bidguard --version"},
	{"help", "bidguard help [COMMAND]"},
}

// usageOf returns the usage lines of the commands whose name starts with
// prefix ("" for all).
func usageOf(prefix string) string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, s := range synopses {
		if s.name == prefix || strings.HasPrefix(s.name, prefix+" ") || prefix == "" {
			b.WriteString("  " + s.line + "\n")
		}
	}
	return b.String()
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// isHelp reports whether an argument asks for help.
func isHelp(a string) bool {
	return a == "help" || a == "-h" || a == "-help" || a == "--help"
}

// run dispatches a command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageOf(""))
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
		return runGroup("config", "validate", args[1:], runValidate, stdout, stderr)
	case "audit":
		return runGroup("audit", "verify", args[1:], runAudit, stdout, stderr)
	case "version":
		return runVersion(args[1:], stdout, stderr)
	case "--version", "-version":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "bidguard: %s takes no arguments\n%s", args[0], usageOf(""))
			return 2
		}
		fmt.Fprintf(stdout, "bidguard %s revision %s %s\n", version, revision, runtime.Version())
		return 0
	}
	if isHelp(args[0]) {
		if len(args) > 1 && !isHelp(args[1]) {
			// bidguard help serve: the command's own help.
			return run(append(args[1:], "-h"), stdout, stderr)
		}
		fmt.Fprint(stdout, usageOf(""))
		return 0
	}
	fmt.Fprintf(stderr, "bidguard: unknown command %q\n%s", args[0], usageOf(""))
	return 2
}

// runGroup runs a command that has subcommands (config, audit): help or -h
// prints the group's usage on stdout, anything but sub is a usage error.
func runGroup(group, sub string, args []string, f func([]string, io.Writer, io.Writer) int, stdout, stderr io.Writer) int {
	switch {
	case len(args) > 0 && args[0] == sub:
		return f(args[1:], stdout, stderr)
	case len(args) > 0 && isHelp(args[0]):
		fmt.Fprint(stdout, usageOf(group))
		return 0
	case len(args) == 0:
		fmt.Fprintf(stderr, "%s: missing subcommand\n%s", group, usageOf(group))
	default:
		fmt.Fprintf(stderr, "%s: unknown subcommand %q\n%s", group, args[0], usageOf(group))
	}
	return 2
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses a command's flags. -h, -help, --help or a first
// argument help print the command's usage and flags on stdout (exit 0); a
// bad flag, or an argument when the command takes none (maxArgs 0), is
// one line on stderr (exit 2). ok is false when the command must return
// code.
func parseFlags(fs *flag.FlagSet, args []string, takesArgs bool, stdout, stderr io.Writer) (code int, ok bool) {
	name := fs.Name()
	err := fs.Parse(args)
	if len(args) > 0 && args[0] == "help" {
		err = flag.ErrHelp
	}
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageOf(name))
		fmt.Fprint(stdout, "\nflags:\n")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		return 0, false
	}
	if err == nil && !takesArgs && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (bidguard %s -h: usage)\n", name, err, name)
		return 2, false
	}
	return 0, true
}
