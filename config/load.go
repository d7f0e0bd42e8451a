package config

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/bidguard/bidguard/configs"
	"go.yaml.in/yaml/v3"
)

// defaultGates returns the gate entries of the embedded default policy
// (configs/bidguard.yaml), for a config that leaves out policy.gates.
func defaultGates() ([]GateConfig, error) {
	var c Config
	if err := decodeStrict(configs.DefaultName, configs.Default, &c); err != nil {
		return nil, err
	}
	return c.Policy.Gates, nil
}

// LoadFile reads, strictly decodes and defaults a config file,
// including the seat files of seatsDir. Every error found is returned
// together (errors.Join), with the config when the file parses (see
// Parse). data is nil only when path itself could not be read.
func LoadFile(path string) (*Config, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := Parse(path, data)
	return cfg, data, err
}

// Parse strictly decodes data (named name in errors) over the
// defaults, gives a policy without gates the embedded default policy's
// gates, reads seatsDir relative to name's directory, and validates every
// key that does not need the gate registry. When the file parses, the
// config is returned with the errors too (wrong types and unknown keys
// included), so that the caller can add the checks that need the gate
// registry and report every error of the file at once; it is nil only
// when the YAML does not parse.
func Parse(name string, data []byte) (*Config, error) { return parse(name, data, true) }

// parse is Parse; bySeat tries decodeBySeat first, then decodeInParts
// (false: the whole document is decoded, what both must agree with).
func parse(name string, data []byte, bySeat bool) (*Config, error) {
	c := DefaultConfig()
	var errs []error
	if !bySeat || !decodeBySeat(name, data, &c) {
		var root *yaml.Node
		var ok bool
		var err error
		if bySeat {
			c, root, ok = decodeInParts(name, data)
		}
		if !ok {
			c = DefaultConfig()
			root, ok, err = decodeRoot(name, data, &c)
		}
		switch {
		case !ok:
			return nil, err
		case err != nil:
			errs = append(errs, err)
		case bySeat:
			rememberSeats(name, data, root, &c)
		}
	}
	for i := range c.Upstreams {
		if c.Upstreams[i].OnError == "" {
			c.Upstreams[i].OnError = OnErrorNoBid
		}
	}
	if c.Policy.Gates == nil {
		g, err := defaultGates()
		if err != nil {
			return nil, err
		}
		c.Policy.Gates = g
	}
	if c.SeatsDir != "" {
		dir := c.SeatsDir
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(name), dir)
		}
		errs = append(errs, c.loadSeatsDir(dir)...)
	}
	for k, s := range c.Seats {
		if s.file == "" {
			s.file = name
			c.Seats[k] = s
		}
	}
	errs = append(errs, c.validate(name)...)
	return &c, joinErrors(errs)
}

func (c *Config) loadSeatsDir(dir string) []error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return []error{fmt.Errorf("seatsDir: %w", err)}
	}
	var errs []error
	if c.Seats == nil {
		c.Seats = make(map[string]SeatConfig, len(entries))
	}
	c.seatBytes = make(map[string][]byte, len(entries))
	last := seatMemo.take(dir)
	read := make(map[string]*seatFile, len(entries))
	defer seatMemo.keep(dir, read)
	paths := make([]string, 0, len(entries))
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			paths = append(paths, filepath.Join(dir, n))
		}
	}
	for _, r := range readSeats(paths, last) {
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		f, s := r.f, r.seat
		read[r.path] = f
		c.seatBytes[r.path] = f.data
		if f.err != nil {
			errs = append(errs, f.err)
			continue
		}
		s.file = r.path
		if s.Seat == "" {
			errs = append(errs, fmt.Errorf("%s: seat: missing (a seat file names its seat key)", r.path))
			continue
		}
		if _, dup := c.Seats[s.Seat]; dup {
			errs = append(errs, fmt.Errorf("%s: seat %q is defined twice", r.path, s.Seat))
			continue
		}
		c.Seats[s.Seat] = s
	}
	return errs
}

// seatRead is a seat file as readSeats read it: the file kept for the
// next load and the seat this load uses, or the error reading it.
type seatRead struct {
	path string
	f    *seatFile
	seat SeatConfig
	err  error
}

// readSeats reads and decodes the seat files paths, in order. A file whose
// bytes are those of last's is not decoded again. A first read (last nil)
// of at least partMin files is spread over the cores, as a first load of
// a seats block is (decodeInParts); a reload, which runs beside the bid
// path, reads on one goroutine, yielding as it goes.
func readSeats(paths []string, last map[string]*seatFile) []seatRead {
	out := make([]seatRead, len(paths))
	workers := partCount()
	if last != nil || len(paths) < partMin {
		workers = 1
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var buf []byte
			for i := w * len(paths) / workers; i < (w+1)*len(paths)/workers; i++ {
				if workers == 1 && i%yieldEvery == yieldEvery-1 {
					runtime.Gosched() // a reload runs beside the bid path, on few cores
				}
				r := &out[i]
				r.path = paths[i]
				var err error
				if buf, err = readFile(paths[i], buf); err != nil {
					r.err = err
					continue
				}
				if f, ok := last[paths[i]]; ok && bytes.Equal(f.data, buf) {
					r.f, r.seat = f, f.seat
				} else {
					r.f, r.seat = decodeSeatFile(paths[i], buf)
				}
			}
		})
	}
	wg.Wait()
	return out
}

// decodeSeatFile decodes the seat file path, read as data, and returns it
// as kept for the next load, with the seat as this load uses it.
func decodeSeatFile(path string, data []byte) (*seatFile, SeatConfig) {
	f := &seatFile{data: bytes.Clone(data)}
	var s SeatConfig
	f.err = decodeStrict(path, f.data, &s)
	s.origin = origins.Add(1)
	f.seat = s.elide(&seatSource{name: path, text: string(f.data), line: -1})
	return f, s
}

// seatFile is a seat file as a load of its seatsDir read it: its bytes,
// and the seat they decode to (its gate entries left out: WithGates) or
// the error decoding them.
type seatFile struct {
	data []byte
	seat SeatConfig
	err  error
}

// seatMemo holds the seat files of the last seatsDir read, so that a
// reload decodes again only the files whose bytes changed (a seatsDir of
// 10,000 files is decoded in about 0.5 s of CPU; read and compared in
// about 50 ms). The decoded seats, their gate entries left out, are shared
// with the configs of earlier loads, which never change them. Only one
// directory is kept: a process loads one config.
var seatMemo seatFiles

type seatFiles struct {
	mu    sync.Mutex
	dir   string
	files map[string]*seatFile // by path
}

// take returns the files last read from dir (nil: none, or another
// directory).
func (m *seatFiles) take(dir string) map[string]*seatFile {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dir != dir {
		return nil
	}
	return m.files
}

// keep remembers files as the files of dir, in place of what was kept.
func (m *seatFiles) keep(dir string, files map[string]*seatFile) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dir, m.files = dir, files
}

// SeatFiles lists the seat files a config reads, for reload polling.
func (c *Config) SeatFiles(configPath string) []string {
	var out []string
	for _, s := range c.Seats {
		if s.file != "" && s.file != configPath {
			out = append(out, s.file)
		}
	}
	sort.Strings(out)
	return out
}
