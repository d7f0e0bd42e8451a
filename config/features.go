package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bidguard/bidguard/audit"
	"github.com/bidguard/bidguard/capture"
	"github.com/bidguard/bidguard/quarantine"
)

// The features whose settings have another shape than their block of the
// file get them from here, converted in one place.

// QuarantineSettings converts the quarantine block for the detector: each
// seat's threshold overrides applied over the global thresholds, and the
// "<upstream>/<seat>" seat keys, under which those seats are tracked apart.
// Version is left for the caller (the compiled snapshot's).
func (c *Config) QuarantineSettings() quarantine.Settings {
	q := c.Quarantine
	s := quarantine.Settings{
		Enabled: q.Enabled, Window: q.Window.Duration(), BaselineWindow: q.BaselineWindow.Duration(),
		Dwell: q.Dwell.Duration(), TTL: q.TTL.Duration(), Calm: q.Calm.Duration(),
		MinSamples: q.MinSamples, MaxShare: q.MaxShare, ValveWindow: q.ValveWindow.Duration(),
		MaxTTL: q.MaxTTL.Duration(), PriceDrop: q.PriceDrop, MaxSeats: q.MaxSeats, Thresholds: toSettings(q.Thresholds),
		Overrides: map[string]quarantine.Thresholds{}, Operator: q.Seats,
	}
	for key, seat := range c.Seats {
		if seat.Quarantine != nil {
			s.Overrides[key] = toSettings(seat.Quarantine.Apply(q.Thresholds))
		}
		if strings.Contains(key, "/") {
			s.Qualified = append(s.Qualified, key)
		}
	}
	return s
}

func toSettings(t QuarantineThresholds) quarantine.Thresholds {
	return quarantine.Thresholds{Rejections: t.Rejections, Price: t.Price, Novelty: t.Novelty, Velocity: t.Velocity}
}

// thresholds is the YAML block of the detector's thresholds t.
func thresholds(t quarantine.Thresholds) QuarantineThresholds {
	return QuarantineThresholds{Rejections: t.Rejections, Price: t.Price, Novelty: t.Novelty, Velocity: t.Velocity}
}

// AuditOptions converts the audit block for audit.Open: the log's path and
// key file resolved against the directory of cfgPath (the config file; ""
// leaves them as they are), the key read from its file. Path "" means the
// log is off. The caller sets what is not configured (Wait, HeadEvery,
// Meters, Logger).
func (c *Config) AuditOptions(cfgPath string) (audit.Options, error) {
	a := c.Audit
	if a.Path == "" {
		return audit.Options{}, nil
	}
	resolve := func(p string) string {
		if filepath.IsAbs(p) || cfgPath == "" {
			return p
		}
		return filepath.Join(filepath.Dir(cfgPath), p)
	}
	opt := audit.Options{Path: resolve(a.Path), FsyncEvery: a.FsyncEvery, SegmentBytes: a.SegmentBytes, Queue: a.Queue}
	if a.KeyFile != "" {
		key, err := audit.ReadKeyFile(resolve(a.KeyFile))
		if err != nil {
			return audit.Options{}, fmt.Errorf("audit.keyFile: %w", err)
		}
		opt.Key, opt.KeyFile = key, resolve(a.KeyFile)
	}
	return opt, nil
}

// CaptureOptions converts the capture block for capture.New: the path
// resolved against the directory of cfgPath (the config file; "" leaves it
// as it is). Path "" means capture is off. The caller sets Meters and
// Logger; sample and onlyRejected are read per auction from the snapshot
// (they follow reloads).
func (c *Config) CaptureOptions(cfgPath string) capture.Options {
	cp := c.Capture
	if cp.Path == "" {
		return capture.Options{}
	}
	path := cp.Path
	if !filepath.IsAbs(path) && cfgPath != "" {
		path = filepath.Join(filepath.Dir(cfgPath), path)
	}
	return capture.Options{Path: path, MaxBytes: cp.MaxBytes, MaxFiles: cp.MaxFiles, Redact: slices.Clone(cp.Redact)}
}
