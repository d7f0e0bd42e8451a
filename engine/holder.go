package engine

import "sync/atomic"

// Holder holds the current snapshot. Load is wait-free; Swap replaces the
// snapshot atomically. Each request keeps the snapshot it loaded on arrival.
type Holder struct {
	p atomic.Pointer[Snapshot]
}

// Load returns the current snapshot (nil before the first Store).
func (h *Holder) Load() *Snapshot { return h.p.Load() }

// Store installs s and returns the previous snapshot.
func (h *Holder) Store(s *Snapshot) *Snapshot { return h.p.Swap(s) }
