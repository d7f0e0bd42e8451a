// Command benchrun runs bidguard's side-by-side comparison and its bad-bid
// load test on loopback, starting and stopping every process itself.
//
//	benchrun compare [flags]   make compare: direct, bare fasthttp proxy, nginx, httputil, bidguard
//	                           (plain and over a TLS upstream)
//	benchrun badmix [flags]    make loadtest: the bad-bid mix through bidguard; fails if one got through
//	benchrun proxy -impl fasthttp|httputil -listen ADDR -upstream ADDR
//	                           a baseline proxy (started by compare as a child process)
//
// Run it from the repository root after `make build` (it uses bin/bidguard
// and bin/loadtest). Every child runs in its own process group and is
// killed when benchrun exits, fails or is interrupted.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/bidguard/bidguard/bench"
)

const usage = `usage:
  benchrun compare [flags]   side-by-side comparison (make compare)
  benchrun badmix [flags]    bad-bid mix through bidguard (make loadtest)
  benchrun proxy -impl fasthttp|httputil -listen ADDR -upstream ADDR
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "compare":
		return runCompare(ctx, args[1:], stdout, stderr)
	case "badmix":
		return runBadmix(ctx, args[1:], stdout, stderr)
	case "proxy":
		return runProxy(ctx, args[1:], stderr)
	}
	fmt.Fprintf(stderr, "benchrun: unknown command %q\n%s", args[0], usage)
	return 2
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("benchrun "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// runProxy serves one of bench's baseline proxies until ctx is done.
func runProxy(ctx context.Context, args []string, stderr io.Writer) int {
	fs := newFlags("proxy", stderr)
	impl := fs.String("impl", "fasthttp", "fasthttp (bare pass-through) or httputil (ReverseProxy)")
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on")
	upstream := fs.String("upstream", "", "bidder host:port")
	if err := fs.Parse(args); err != nil || *upstream == "" {
		fmt.Fprintln(stderr, "proxy: -upstream is required")
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "proxy: %v\n", err)
		return 1
	}
	errc := make(chan error, 1)
	var shutdown func()
	switch *impl {
	case "fasthttp":
		p := bench.NewFastProxy(*upstream)
		go func() { errc <- p.Serve(ln) }()
		shutdown = func() { _ = p.Server.Shutdown() }
	case "httputil":
		s := bench.NewStdProxy(*upstream)
		go func() { errc <- s.Serve(ln) }()
		shutdown = func() { _ = s.Close() }
	default:
		fmt.Fprintf(stderr, "proxy: unknown -impl %q\n", *impl)
		return 2
	}
	select {
	case <-ctx.Done():
		shutdown()
		return 0
	case err := <-errc:
		fmt.Fprintf(stderr, "proxy: %v\n", err)
		return 1
	}
}
