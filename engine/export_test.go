package engine

import (
	"fmt"
	"time"
)

// SetClock replaces the real clock for a test and returns the restore
// function.
func SetClock(now func() time.Time) (restore func()) {
	clockNow = now
	clockSince = func(t time.Time) time.Duration { return now().Sub(t) }
	return func() { clockNow, clockSince = time.Now, time.Since }
}

// CheckInterned returns an error when a snapshot breaks its intern table's
// invariants: every interned entry of its policies is the table's entry of
// its key, over the table's gate of its gate key, and entry ids are
// distinct.
func CheckInterned(s *Snapshot) error {
	ids := map[uint64]*GateEntry{}
	for _, p := range s.policies {
		for _, e := range p.Gates {
			if other, ok := ids[e.id]; ok && other != e {
				return fmt.Errorf("%s: entry %s: id %d taken by another entry", p.Key, e.Name, e.id)
			}
			ids[e.id] = e
			if e.interned == nil {
				continue
			}
			if s.intern.entries[e.key] != e {
				return fmt.Errorf("%s: entry %s is not its key's entry", p.Key, e.Name)
			}
			if s.intern.gates[e.key.gate] != e.interned {
				return fmt.Errorf("%s: entry %s: its gate is not its key's gate", p.Key, e.Name)
			}
		}
	}
	return nil
}

// ReusedSeats is how many seat policies the snapshot took whole from the
// one it was compiled from.
func ReusedSeats(s *Snapshot) int { return s.reused }
