// Package configs embeds the default configuration, bidguard.yaml.
package configs

import _ "embed"

// Default is the embedded bidguard.yaml.
//
//go:embed bidguard.yaml
var Default []byte

// DefaultName labels the embedded config in errors and version output.
const DefaultName = "bidguard.yaml (embedded)"
