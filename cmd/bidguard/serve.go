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

// serveFlags are the flags of `bidguard serve`, and the process's
// shutdown signals.
type serveFlags struct {
	config, listen, admin, upstream string
	logLevel, logFormat             string
	demo, pprof                     bool
	// term receives SIGTERM and SIGINT: the first starts the drain, a
	// second cuts it short. Nil in tests that stop serve through its ctx.
	term <-chan os.Signal
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
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error (replaces log.level)")
	fs.StringVar(&f.logFormat, "log-format", "", "text or json (replaces log.format)")
	fs.BoolVar(&f.demo, "demo", false, "start a demo bidder on loopback and route to it")
	fs.BoolVar(&f.pprof, "pprof", false, "serve Go's profiles under /debug/pprof/ on the admin listener")
	if code, ok := parseFlags(fs, args, false, stdout, stderr); !ok {
		return code
	}
	usageErr := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "serve: "+format+"\n", args...)
		return 2
	}
	if f.demo && f.upstream != "" {
		return usageErr("--demo and --upstream cannot be combined")
	}
	if f.upstream != "" {
		if _, err := config.ParseUpstreamURL(f.upstream); err != nil {
			return usageErr("--upstream: %v", err)
		}
	}
	if _, ok := config.LogLevel(f.logLevel); f.logLevel != "" && !ok {
		return usageErr("--log-level: %q is not debug, info, warn or error", f.logLevel)
	}
	if f.logFormat != "" && f.logFormat != "text" && f.logFormat != "json" {
		return usageErr("--log-format: %q is not text or json", f.logFormat)
	}
	// SIGHUP is caught from here on: from now on it never kills serve, and
	// one sent during startup is handled once the reload loop runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	term := make(chan os.Signal, 2)
	signal.Notify(term, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(term)
	f.term = term
	return serve(context.Background(), f, hup, stderr)
}

// newLogger is serve's logger on w: format text or json, level lv.
func newLogger(w io.Writer, format string, lv *slog.LevelVar) *slog.Logger {
	opt := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opt))
	}
	return slog.New(slog.NewTextHandler(w, opt))
}

// setLevel applies log.level, unless --log-level replaces it.
func setLevel(lv *slog.LevelVar, f serveFlags, cfg *config.Config) {
	name := cfg.Log.Level
	if f.logLevel != "" {
		name = f.logLevel
	}
	if l, ok := config.LogLevel(name); ok {
		lv.Set(l)
	}
}

// serve runs the sidecar until ctx is done (then it stops at once) or a
// signal arrives on f.term (then it drains first: see drain). It polls
// the config for changes and reloads on each value received from hup.
// Everything it says, the start-up banner and errors included, goes
// through its logger on stderr.
func serve(ctx context.Context, f serveFlags, hup <-chan os.Signal, stderr io.Writer) int {
	var level slog.LevelVar
	format := f.logFormat
	log := newLogger(stderr, format, &level)
	injectProcessFaults()
	fail := func(err error) int {
		for _, line := range strings.Split(err.Error(), "\n") {
			log.Error("serve: start-up failed", "error", line)
		}
		return 1
	}
	snap, err := loadSnapshot(f.config)
	if err != nil {
		return fail(err)
	}
	if format == "" && snap.Config.Log.Format != "text" {
		format = snap.Config.Log.Format
		log = newLogger(stderr, format, &level)
	}
	setLevel(&level, f, snap.Config)
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
	releaseLoadGarbage()
	cfg := snap.Config
	var aud auditor
	var capt capturer
	opt := rtb.Options{Version: version, Revision: revision, Logger: log, Judged: quar.judged, Quarantine: quar.handler(), Pprof: f.pprof}
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
	describeServeMetrics(srv)
	registerMarkupCache(srv.Metrics())
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
		s, err := reloadSnapshot(holder.Load(), f.config)
		if err == nil {
			applyServeFlags(s, f)
			quar.attach(s)
		}
		return s, err
	}
	rl := newReloader(f.config, snap, load, srv.Install, &holder, log, reloads)
	rl.onLoad = func(s *engine.Snapshot, trigger string) {
		setLevel(&level, f, s.Config)
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
	log.Info("serving", "version", version, "revision", revision, "listen", ln.Addr().String(), "admin", aln.Addr().String(),
		"config", snap.Version, "upstreams", len(cfg.Upstreams))

	code := 0
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case sig := <-f.term:
		code = drain(ctx, srv, holder.Load().Config.Shutdown.DrainMs, sig, f.term, errc, log)
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

// drain is the first phase of a graceful shutdown, after the first
// SIGTERM (SIGINT, Ctrl-C at a terminal, skips it): /readyz answers 503 at once, so the balancer stops sending new
// connections, while both listeners keep accepting and answering for
// shutdown.drainMs (the config in use when the signal came); answers carry
// Connection: close, so a client's next request opens a new connection,
// which the balancer routes elsewhere once it has seen the 503. A second
// signal, ctx or a failed listener ends it early. It returns the exit
// status so far (1 when a listener failed).
func drain(ctx context.Context, srv *rtb.Server, ms int, sig os.Signal, term <-chan os.Signal, errc <-chan error, log *slog.Logger) int {
	if ms <= 0 || sig == os.Interrupt {
		log.Info("shutting down", "signal", sig.String())
		return 0
	}
	srv.Drain()
	log.Info("draining: /readyz answers 503, still serving; a second signal stops at once",
		"signal", sig.String(), "drainMs", ms)
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		log.Info("drain over: shutting down")
	case sig := <-term:
		log.Info("drain cut short: shutting down", "signal", sig.String())
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-errc:
		log.Error("listener failed", "error", err)
		return 1
	}
	return 0
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
