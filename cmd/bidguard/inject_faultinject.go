//go:build faultinject

package main

import (
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
