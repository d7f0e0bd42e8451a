//go:build faultinject

package main

import (
	"os"

	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/gates"
)

// registry adds faultPanic to the built-in gates: a per-bid gate that
// panics on a bid whose id is "panic" and passes every other bid. Only the
// fault suite's binaries are built with the faultinject tag.
func registry() engine.Registry {
	reg := gates.Builtin()
	reg["faultPanic"] = engine.Factory{
		Name: "faultPanic", ResultName: "faultinject.panic", Kind: engine.PerBid,
		Options: func() any { return &struct{}{} },
		New:     func(any, engine.Env) (engine.Gate, error) { return faultPanic{}, nil },
	}
	return reg
}

type faultPanic struct{}

func (faultPanic) Kind() engine.Kind            { return engine.PerBid }
func (faultPanic) Prepare(*engine.Input) string { return "" }
func (faultPanic) CheckBid(_ *engine.Input, b *engine.Bid) engine.Verdict {
	if b.ID == "panic" {
		panic("faultinject: gate")
	}
	return engine.Pass()
}

// injectProcessFaults starts what the environment asks for: with
// BIDGUARD_FAULTINJECT_BUSY=1 a goroutine that spins forever, so that
// serve runs starved of CPU (with GOMAXPROCS=1, every other goroutine
// shares the one P with it).
func injectProcessFaults() {
	if os.Getenv("BIDGUARD_FAULTINJECT_BUSY") == "1" {
		go func() {
			for n := 0; ; n++ {
				_ = n * n
			}
		}()
	}
}
