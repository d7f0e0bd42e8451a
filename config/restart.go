package config

import "slices"

// restartKeys are the keys a reload cannot apply, with how to tell a
// change and how to keep the running value: the listeners are bound, the
// audit chain and the capture file are open and the log handler is built at
// start. A new key of these blocks that needs a restart gets a row here (the
// test checks every audit key has one).
var restartKeys = []struct {
	path    string
	changed func(old, cur *Config) bool
	keep    func(running, cur *Config)
}{
	{"listen", func(o, c *Config) bool { return o.Listen != c.Listen }, func(r, c *Config) { c.Listen = r.Listen }},
	{"adminListen", func(o, c *Config) bool { return o.AdminListen != c.AdminListen }, func(r, c *Config) { c.AdminListen = r.AdminListen }},
	{"audit.path", func(o, c *Config) bool { return o.Audit.Path != c.Audit.Path }, func(r, c *Config) { c.Audit.Path = r.Audit.Path }},
	{"audit.keyFile", func(o, c *Config) bool { return o.Audit.KeyFile != c.Audit.KeyFile }, func(r, c *Config) { c.Audit.KeyFile = r.Audit.KeyFile }},
	{"audit.fsyncEvery", func(o, c *Config) bool { return o.Audit.FsyncEvery != c.Audit.FsyncEvery }, func(r, c *Config) { c.Audit.FsyncEvery = r.Audit.FsyncEvery }},
	{"audit.segmentBytes", func(o, c *Config) bool { return o.Audit.SegmentBytes != c.Audit.SegmentBytes }, func(r, c *Config) { c.Audit.SegmentBytes = r.Audit.SegmentBytes }},
	{"audit.queue", func(o, c *Config) bool { return o.Audit.Queue != c.Audit.Queue }, func(r, c *Config) { c.Audit.Queue = r.Audit.Queue }},
	{"log.format", func(o, c *Config) bool { return o.Log.Format != c.Log.Format }, func(r, c *Config) { c.Log.Format = r.Log.Format }},
	{"capture.path", func(o, c *Config) bool { return o.Capture.Path != c.Capture.Path }, func(r, c *Config) { c.Capture.Path = r.Capture.Path }},
	{"capture.maxBytes", func(o, c *Config) bool { return o.Capture.MaxBytes != c.Capture.MaxBytes }, func(r, c *Config) { c.Capture.MaxBytes = r.Capture.MaxBytes }},
	{"capture.maxFiles", func(o, c *Config) bool { return o.Capture.MaxFiles != c.Capture.MaxFiles }, func(r, c *Config) { c.Capture.MaxFiles = r.Capture.MaxFiles }},
	{"capture.redact", func(o, c *Config) bool { return !slices.Equal(o.Capture.Redact, c.Capture.Redact) }, func(r, c *Config) { c.Capture.Redact = r.Capture.Redact }},
}

// RestartKeys lists the keys whose value differs between old and c and
// that take effect only at a restart, as the file spells them, in the
// order of the file's reference.
func (c *Config) RestartKeys(old *Config) []string {
	var keys []string
	for _, k := range restartKeys {
		if k.changed(old, c) {
			keys = append(keys, k.path)
		}
	}
	return keys
}

// KeepRestartKeys gives c the running config's value of every restart-only
// key that differs, so that a reload applies the rest of the file, and
// lists those keys (RestartKeys' order). c must not be shared yet.
func (c *Config) KeepRestartKeys(running *Config) []string {
	var keys []string
	for _, k := range restartKeys {
		if k.changed(running, c) {
			k.keep(running, c)
			keys = append(keys, k.path)
		}
	}
	return keys
}
