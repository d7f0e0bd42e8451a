package testserve

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Bounds of a start and a stop.
const (
	startBound = 30 * time.Second
	stopBound  = 15 * time.Second
)

// Buffer is a bytes.Buffer safe for a writer and readers at once (a
// child's or an in-process serve's stderr).
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Banner is serve's start-up log line: [1] the exchange address, [2] the
// admin one.
var Banner = regexp.MustCompile(`msg=serving .*?listen=(\S+) admin=(\S+)`)

// WaitBanner waits for the banner in log and returns its addresses.
// exited, when not nil, is closed when serve stopped (a start-up
// failure). It fails the test after 30 s.
func WaitBanner(t testing.TB, log *Buffer, exited <-chan struct{}) (addr, admin string) {
	t.Helper()
	deadline := time.After(startBound)
	for {
		if m := Banner.FindStringSubmatch(log.String()); m != nil {
			return m[1], m[2]
		}
		select {
		case <-exited:
			t.Fatalf("serve stopped before serving: %s", log.String())
		case <-deadline:
			t.Fatalf("serve did not start: %s", log.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

var builds struct {
	sync.Mutex
	dir   string
	paths map[string]string
	errs  map[string]error
}

// Build builds cmd/bidguard with the go build flags (once per test binary
// and set of flags) and returns the binary's path.
func Build(t testing.TB, flags ...string) string {
	t.Helper()
	builds.Lock()
	defer builds.Unlock()
	key := strings.Join(flags, " ")
	if p, ok := builds.paths[key]; ok {
		require.NoError(t, builds.errs[key])
		return p
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "bidguard-testserve-")
		require.NoError(t, err)
		builds.dir, builds.paths, builds.errs = dir, map[string]string{}, map[string]error{}
	}
	root, err := moduleRoot()
	require.NoError(t, err)
	p := filepath.Join(builds.dir, fmt.Sprintf("bidguard-%d", len(builds.paths)))
	args := append(append([]string{"build", "-o", p}, flags...), "./cmd/bidguard")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		builds.errs[key] = fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	builds.paths[key] = p
	require.NoError(t, builds.errs[key])
	return p
}

// RemoveBuilds removes the binaries Build made; call it from TestMain
// after m.Run.
func RemoveBuilds() {
	builds.Lock()
	defer builds.Unlock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
		builds.dir, builds.paths, builds.errs = "", nil, nil
	}
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not in a module")
	}
	return filepath.Dir(mod), nil
}

// Options start a serve process.
type Options struct {
	Bin  string   // the binary (Build(t) when empty)
	Args []string // after "serve": --config, --upstream...
	Env  []string // added to the test's environment
	// Command, when set, makes the command from the argument vector (a
	// shell wrapper that sets limits, say).
	Command func(argv []string) *exec.Cmd
	// Stderr, when set, also gets the child's stderr.
	Stderr io.Writer
}

// Proc is a running `bidguard serve`.
type Proc struct {
	Cmd         *exec.Cmd
	Addr, Admin string  // from the banner
	Log         *Buffer // the child's stderr

	t    testing.TB
	done chan struct{}
	err  error
}

// Start runs serve and returns once it logged its banner and /readyz
// answers 200. When the test ends, a process still running is stopped as
// by Stop.
func Start(t testing.TB, o Options) *Proc {
	t.Helper()
	if o.Bin == "" {
		o.Bin = Build(t)
	}
	argv := append([]string{o.Bin, "serve"}, o.Args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	if o.Command != nil {
		cmd = o.Command(argv)
	}
	cmd.Env = append(os.Environ(), o.Env...)
	p := &Proc{Cmd: cmd, Log: &Buffer{}, t: t, done: make(chan struct{})}
	cmd.Stderr = p.Log
	if o.Stderr != nil {
		cmd.Stderr = io.MultiWriter(p.Log, o.Stderr)
	}
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if !p.Exited() {
			p.Stop()
		}
	})
	p.Addr, p.Admin = WaitBanner(t, p.Log, p.done)
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	ready := func() bool {
		resp, err := c.Get("http://" + p.Admin + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	require.Eventually(t, ready, startBound, 5*time.Millisecond, "/readyz answers 200; stderr: %s", p.Log)
	return p
}

// Done is closed when the process has exited; Err is then its exit error.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error; read it after Done.
func (p *Proc) Err() error { return p.err }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process.
func (p *Proc) Signal(sig os.Signal) {
	p.t.Helper()
	require.NoError(p.t, p.Cmd.Process.Signal(sig))
}

// Wait waits for the exit at most d: it returns whether the process
// exited, and its exit error.
func (p *Proc) Wait(d time.Duration) (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	case <-time.After(d):
		return false, nil
	}
}

// Stop sends SIGTERM and requires exit 0 within 15 s; a process that does
// not exit by then is killed and the test fails.
func (p *Proc) Stop() {
	p.t.Helper()
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	exited, err := p.Wait(stopBound)
	if !exited {
		_ = p.Cmd.Process.Kill()
		<-p.done
		p.t.Fatalf("serve did not stop within %v; stderr: %s", stopBound, p.Log)
	}
	require.NoError(p.t, err, "exit 0 after SIGTERM; stderr: %s", p.Log)
}
