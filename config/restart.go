package config

import "slices"

// restartKeys are the keys a reload cannot apply, with how to tell a
// change: the listeners are bound, the audit chain and the capture file are
// open at start. A new key of these blocks that needs a restart gets a row
// here (the test checks every audit key has one).
var restartKeys = []struct {
	path    string
	changed func(old, cur *Config) bool
}{
	{"listen", func(o, c *Config) bool { return o.Listen != c.Listen }},
	{"adminListen", func(o, c *Config) bool { return o.AdminListen != c.AdminListen }},
	{"audit.path", func(o, c *Config) bool { return o.Audit.Path != c.Audit.Path }},
	{"audit.keyFile", func(o, c *Config) bool { return o.Audit.KeyFile != c.Audit.KeyFile }},
	{"audit.fsyncEvery", func(o, c *Config) bool { return o.Audit.FsyncEvery != c.Audit.FsyncEvery }},
	{"audit.segmentBytes", func(o, c *Config) bool { return o.Audit.SegmentBytes != c.Audit.SegmentBytes }},
	{"audit.queue", func(o, c *Config) bool { return o.Audit.Queue != c.Audit.Queue }},
	{"capture.path", func(o, c *Config) bool { return o.Capture.Path != c.Capture.Path }},
	{"capture.maxBytes", func(o, c *Config) bool { return o.Capture.MaxBytes != c.Capture.MaxBytes }},
	{"capture.maxFiles", func(o, c *Config) bool { return o.Capture.MaxFiles != c.Capture.MaxFiles }},
	{"capture.redact", func(o, c *Config) bool { return !slices.Equal(o.Capture.Redact, c.Capture.Redact) }},
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
