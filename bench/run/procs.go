package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procs starts child processes and stops them all: each runs in its own
// process group (so a child's own children go too), gets SIGKILL if
// benchrun dies (Pdeathsig), and logs into dir/<name>.log.
type procs struct {
	dir  string
	mu   sync.Mutex
	list []*child
}

type child struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed when the process exited
}

// start runs name's command line.
func (p *procs) start(name string, argv ...string) (*child, error) {
	log := filepath.Join(p.dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(c.done) }()
	p.mu.Lock()
	p.list = append(p.list, c)
	p.mu.Unlock()
	return c, nil
}

// pid is the child's process id, which is also its process group's id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// stopAll sends SIGTERM to every child's group, waits up to 5s, then sends
// SIGKILL to what is left.
func (p *procs) stopAll() {
	p.mu.Lock()
	list := p.list
	p.list = nil
	p.mu.Unlock()
	for _, c := range list {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	}
	deadline := time.After(5 * time.Second)
	for _, c := range list {
		select {
		case <-c.done:
		case <-deadline:
		}
	}
	for _, c := range list {
		select {
		case <-c.done:
		default:
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	}
}

// tail returns the last lines of a child's log, for error messages.
func (c *child) tail() string {
	data, _ := os.ReadFile(c.log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], "\n")
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func loopback(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// readyTimeout bounds the wait for a child to answer.
const readyTimeout = 20 * time.Second

// waitReady polls probe until it succeeds, the child exits, ctx is done or
// readyTimeout passes.
func waitReady(ctx context.Context, c *child, probe func() error) error {
	deadline := time.Now().Add(readyTimeout)
	var err error
	for {
		if err = probe(); err == nil {
			return nil
		}
		select {
		case <-c.done:
			return fmt.Errorf("%s exited before it was ready:\n%s", c.name, c.tail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("%s not ready after %s:\n%s", c.name, readyTimeout, c.tail()), err)
		}
	}
}
