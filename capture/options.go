package capture

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// Options configure a Writer.
type Options struct {
	// Path is the file written; rotated files are "<Path>.<n>".
	Path string
	// MaxBytes is a file's size limit: a record that would pass it goes
	// to a new file (a record larger than MaxBytes has a file to itself).
	MaxBytes int64
	// MaxFiles is how many files are kept, the one being written included.
	MaxFiles int
	// Redact are the request's JSON paths whose values are replaced by
	// null (dot-separated member names, matched as encoding/json matches
	// keys to fields).
	Redact []string
	// QueueBytes bounds the bytes of the entries waiting for the writer
	// (0: DefaultQueueBytes); QueueEntries bounds their number (0:
	// DefaultQueueEntries).
	QueueBytes   int64
	QueueEntries int
	// Meters are the counters the Writer updates; nil fields are not counted.
	Meters Meters
	// Logger receives open and write failures, once per spell of them, and
	// the recovery. Nil means slog.Default().
	Logger *slog.Logger
}

// Defaults of the configuration block and the queue.
const (
	DefaultMaxBytes     = 64 << 20
	DefaultMaxFiles     = 8
	MinMaxBytes         = 4096
	DefaultQueueBytes   = 32 << 20
	DefaultQueueEntries = 1024
)

// DefaultRedact are the user and device identifiers removed unless the
// config lists its own paths: each also under the object's ext.
var DefaultRedact = withExt(
	"user.id", "user.buyeruid", "user.eids",
	"device.ifa", "device.ip", "device.ipv6", "device.geo.lat", "device.geo.lon",
)

// withExt returns paths followed by each with ".ext" after its first
// member ("user.ext.eids").
func withExt(paths ...string) []string {
	out := append([]string(nil), paths...)
	for _, p := range paths {
		obj, rest, _ := strings.Cut(p, ".")
		out = append(out, obj+".ext."+rest)
	}
	return out
}

// Counter is what a Writer counts with; *metrics.Counter of
// VictoriaMetrics/metrics is one.
type Counter interface{ Add(n int) }

// Meters are a Writer's counters.
type Meters struct {
	Written Counter // records written
	Dropped Counter // entries refused by Submit: queue full or Writer closed
	Failed  Counter // records lost to a file that could not be opened or written
	Bytes   Counter // bytes written
	Rotated Counter // files rotated
}

type noCounter struct{}

func (noCounter) Add(int) {}

func (m *Meters) fill() {
	for _, c := range []*Counter{&m.Written, &m.Dropped, &m.Failed, &m.Bytes, &m.Rotated} {
		if *c == nil {
			*c = noCounter{}
		}
	}
}

// ValidatePath reports what is wrong with a redact path.
func ValidatePath(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	for _, name := range strings.Split(p, ".") {
		if name == "" {
			return fmt.Errorf("%q: empty member name", p)
		}
	}
	return nil
}

// ValidateSample reports whether share is a valid sampling share.
func ValidateSample(share float64) error {
	if !(share >= 0 && share <= 1) {
		return fmt.Errorf("%v is not in [0, 1]", share)
	}
	return nil
}
