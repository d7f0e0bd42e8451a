package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/configs"
	"github.com/bidguard/bidguard/engine"
)

// loadSnapshot reads and compiles a config file; path "" is the embedded
// default config.
func loadSnapshot(path string) (*engine.Snapshot, error) { return reloadSnapshot(nil, path) }

// reloadSnapshot is loadSnapshot reusing the gates of prev, the snapshot in
// use (nil: none), whose options did not change.
func reloadSnapshot(prev *engine.Snapshot, path string) (*engine.Snapshot, error) {
	var (
		cfg  *config.Config
		data []byte
		err  error
		name = path
	)
	if path == "" {
		name, data = configs.DefaultName, configs.Default
		cfg, err = config.Parse(name, data)
	} else {
		if cfg, data, err = config.LoadFile(path); err != nil && data == nil {
			err = unreadable{err}
		}
	}
	if err != nil {
		return nil, err
	}
	return engine.CompileFrom(prev, cfg, name, data, registry())
}

// unreadable marks an error reading the config file itself rather than
// its content (the seat files and the files gate options name are content).
type unreadable struct{ error }

func (u unreadable) Unwrap() error { return u.error }

// isUnreadable reports whether err is about reading the config file rather
// than its content.
func isUnreadable(err error) bool {
	var u unreadable
	return errors.As(err, &u)
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// runValidate is `bidguard config validate`: 0 valid (each policy's
// effective gates printed; warnings, such as `gates: []`, on stderr), 1
// invalid (every error listed), 2 unreadable file or bad flags.
func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("config validate")
	path := fs.String("config", "", "config file (default: the embedded config)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "config validate: %v\n", flagErr(err, fs))
		return 2
	}
	snap, err := loadSnapshot(*path)
	if err != nil {
		if isUnreadable(err) {
			fmt.Fprintln(stderr, err)
			return 2
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			fmt.Fprintln(stderr, line)
		}
		return 1
	}
	fmt.Fprintf(stdout, "config %s is valid (version %s)\n", displayName(*path), snap.Version)
	for _, w := range snap.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	if err := snap.DescribeTo(stdout); err != nil {
		fmt.Fprintf(stderr, "config validate: %v\n", err)
		return 2
	}
	return 0
}

// runVersion prints the binary's version and the config version.
func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version")
	path := fs.String("config", "", "config file (default: the embedded config)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "version: %v\n", flagErr(err, fs))
		return 2
	}
	snap, err := loadSnapshot(*path)
	if err != nil {
		fmt.Fprintf(stderr, "%s\n", oneLine(err))
		return 2
	}
	fmt.Fprintf(stdout, "bidguard %s %s config %s\n", version, runtime.Version(), snap.Version)
	return 0
}

func displayName(path string) string {
	if path == "" {
		return configs.DefaultName
	}
	return path
}

func flagErr(err error, fs *flag.FlagSet) error {
	if errors.Is(err, flag.ErrHelp) {
		// -h: the flags with their defaults, after the command's name.
		var b strings.Builder
		b.WriteString("flags:\n")
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
		return errors.New(strings.TrimRight(b.String(), "\n"))
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("unexpected argument %q", fs.Arg(0))
}

// oneLine folds a multi-error into one line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }
