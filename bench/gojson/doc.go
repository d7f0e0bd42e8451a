// Package gojson measures github.com/goccy/go-json against bidguard's own
// decoder (engine.Eval.DecodeResponse) and encoding/json: time and
// allocations on the typical response and on a 1,000-bid response, and
// behaviour on the decode corpus (duplicate and case-variant keys, invalid
// UTF-8, numbers that overflow float64). It is a module of its own so that
// go-json never becomes a dependency of bidguard: run it with
// `cd bench/gojson && go test -bench . -benchmem`.
package gojson
