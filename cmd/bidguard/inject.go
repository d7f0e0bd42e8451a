//go:build !faultinject

package main

import (
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
)

// registry is the gate registry serve, check and config validate compile
// with: the built-in gates (binaries built with the faultinject tag add a
// gate that panics, for the fault suite).
func registry() engine.Registry { return gates.Builtin() }

// injectProcessFaults is a no-op without the faultinject tag.
func injectProcessFaults() {}
