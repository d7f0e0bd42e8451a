package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/rtb"
)

// shutdownGrace bounds the graceful shutdown: requests in flight finish
// well within it (tmax is capped at deadline.maxTmaxMs).
const shutdownGrace = 10 * time.Second

// serveFlags are the flags of `bidguard serve`.
type serveFlags struct {
	config, listen, admin, upstream string
	demo, pprof                     bool
}

// runServe is `bidguard serve`: exit 0 after a graceful shutdown on SIGTERM
// or SIGINT, 1 on a startup error (bad config, address in use), 2 on bad
// flags. Nothing listens before the config is loaded and compiled. SIGHUP
// reloads the config.
func runServe(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("serve")
	var f serveFlags
	fs.StringVar(&f.config, "config", "", "config file (default: the embedded config)")
	fs.StringVar(&f.listen, "listen", "", "exchange-facing address (replaces listen)")
	fs.StringVar(&f.admin, "admin", "", "admin address: /metrics, /healthz, /readyz (replaces adminListen)")
	fs.StringVar(&f.upstream, "upstream", "", "bidder URL (replaces upstreams by {name: default, url: URL, path: /})")
	fs.BoolVar(&f.demo, "demo", false, "start a demo bidder on loopback and route to it")
	fs.BoolVar(&f.pprof, "pprof", false, "serve Go's profiles under /debug/pprof/ on the admin listener")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "serve: %v\n", flagErr(err, fs))
		return 2
	}
	if f.demo && f.upstream != "" {
		fmt.Fprintln(stderr, "serve: --demo and --upstream cannot be combined")
		return 2
	}
	if f.upstream != "" {
		if _, err := config.ParseUpstreamURL(f.upstream); err != nil {
			fmt.Fprintf(stderr, "serve: --upstream: %v\n", err)
			return 2
		}
	}
	// SIGHUP is caught from here on: from now on it never kills serve, and
	// one sent during startup is handled once the reload loop runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return serve(ctx, f, hup, stdout, stderr)
}

// serve runs the sidecar until ctx is done, then shuts down gracefully. It
// polls the config for changes and reloads on each value received from hup.
func serve(ctx context.Context, f serveFlags, hup <-chan os.Signal, stdout, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	injectProcessFaults()
	fail := func(err error) int {
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintf(stderr, "serve: %s\n", line)
		}
		return 1
	}
	snap, err := loadSnapshot(f.config)
	if err != nil {
		return fail(err)
	}
	if f.demo {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fail(fmt.Errorf("demo bidder: %w", err))
		}
		demo := rtb.NewDemoBidder()
		go func() { _ = demo.Serve(ln) }()
		defer demo.Close()
		f.upstream = "http://" + ln.Addr().String() + "/bid"
		log.Info("demo bidder started", "url", f.upstream)
	}
	applyServeFlags(snap, f)

	var holder engine.Holder
	quar := newQuarantineWiring(f.config, &holder, log, time.Now)
	quar.attach(snap)
	holder.Store(snap)
	cfg := snap.Config
	var aud auditor
	var capt capturer
	opt := rtb.Options{Version: version, Logger: log, Judged: quar.judged, Quarantine: quar.handler(), Pprof: f.pprof}
	if cfg.Audit.Path != "" {
		opt.Audit = aud.judged
	}
	if cfg.Capture.Path != "" {
		opt.Capture = capt.judged
	}
	srv, err := rtb.New(&holder, opt)
	if err != nil {
		return fail(err)
	}
	reloads := newReloadMeters(srv.Metrics())
	reloads.ok.Set(1) // the startup load succeeded
	quar.register(srv.Metrics())
	capt.open(f.config, cfg, captureMeters(srv.Metrics()), log)
	defer capt.close(log)
	// The audit log is open before anything listens: a bad key or a damaged
	// log stops startup.
	aud.log, err = openAudit(f.config, cfg, auditMeters(srv.Metrics()), log, false, auditHeadEvery)
	if err != nil {
		return fail(err)
	}
	if aud.log != nil {
		defer func() {
			if err := aud.log.Close(); err != nil {
				log.Error("audit log", "error", err)
			}
		}()
		_ = aud.log.Append(configRecord(snap, "startup", f.config)) // open: Append cannot fail
	}
	quar.audit = aud.log
	if err := quar.update(snap); err != nil {
		return fail(err)
	}
	qctx, stopQuarantine := context.WithCancel(ctx)
	quarantineDone := make(chan struct{})
	go func() {
		defer close(quarantineDone)
		quar.d.Run(qctx)
	}()
	defer func() { stopQuarantine(); <-quarantineDone }() // before the audit log closes
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fail(err)
	}
	rtb.PrepareListener(ln, 250*time.Millisecond)
	aln, err := net.Listen("tcp", cfg.AdminListen)
	if err != nil {
		_ = ln.Close()
		return fail(err)
	}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	go func() { errc <- srv.ServeAdmin(aln) }()
	load := func() (*engine.Snapshot, error) {
		s, err := loadSnapshot(f.config)
		if err == nil {
			applyServeFlags(s, f)
			quar.attach(s)
		}
		return s, err
	}
	rl := newReloader(f.config, snap, load, srv.Install, &holder, log, reloads)
	rl.onLoad = func(s *engine.Snapshot, trigger string) {
		if aud.log != nil {
			_ = aud.log.Append(configRecord(s, "reload ("+trigger+")", f.config))
		}
		if err := quar.update(s); err != nil {
			log.Error("quarantine settings not applied", "error", err)
		}
	}
	rctx, stopReload := context.WithCancel(ctx)
	reloadDone := make(chan struct{})
	go func() {
		defer close(reloadDone)
		rl.run(rctx, hup)
	}()
	if len(cfg.Upstreams) == 0 {
		log.Warn("no upstreams configured: every bid request is answered 404 (use --upstream URL or --demo)")
	}
	fmt.Fprintf(stdout, "bidguard %s serving on %s (admin %s), config %s\n", version, ln.Addr(), aln.Addr(), snap.Version)
	log.Info("serving", "listen", ln.Addr().String(), "admin", aln.Addr().String(), "config", snap.Version, "upstreams", len(cfg.Upstreams))

	code := 0
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-errc:
		log.Error("listener failed", "error", err)
		code = 1
	}
	stopReload()
	<-reloadDone
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("shutdown", "error", err)
	}
	log.Info("stopped")
	return code
}

// applyServeFlags applies --listen, --admin and --upstream to a freshly
// loaded snapshot (before it is shared); a reload applies them again.
func applyServeFlags(snap *engine.Snapshot, f serveFlags) {
	if f.listen != "" {
		snap.Config.Listen = f.listen
	}
	if f.admin != "" {
		snap.Config.AdminListen = f.admin
	}
	if f.upstream != "" {
		snap.Config.Upstreams = []config.Upstream{{Name: "default", URL: f.upstream, Path: "/"}}
	}
}
