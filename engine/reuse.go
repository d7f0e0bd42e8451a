package engine

import (
	"slices"

	"github.com/bidguard/bidguard/config"
)

// A reload takes whole the seat policies whose seat did not change: the
// seat was decoded from the same text (config.SeatConfig.Origin) and the
// default policy it inherits kept its entries (seatContext).

// seatContext is what a seat policy's compilation depends on beside the
// seat itself: the config file, the default policy's entries (their keys
// are over their options and directory), its action and failFast, and
// whether its result names are distinct.
type seatContext struct {
	name             string
	def              []*GateEntry
	shadow, failFast bool
	defNamesOK       bool
}

func (x seatContext) equal(y seatContext) bool {
	return x.name == y.name && x.shadow == y.shadow && x.failFast == y.failFast &&
		x.defNamesOK == y.defNamesOK && slices.Equal(x.def, y.def)
}

// reuse returns the previous snapshot's policy of the seat key, in a new
// Policy, when the seat was decoded from the same source (its origin) and
// compiled in the same context, with its entries, gates and list entered
// in the new intern table; nil when it must be compiled. Such a seat
// compiles to the same policy: its entries are keyed by what it and the
// default policy hold, which did not change.
func (c *compiler) reuse(key string, sc config.SeatConfig) *Policy {
	old := c.prevSeats[key]
	if old == nil || !old.reusable || sc.Origin() == 0 || old.origin != sc.Origin() {
		return nil
	}
	for _, e := range old.Gates {
		if _, ok := c.cur.entries[e.key]; !ok {
			c.cur.entries[e.key] = e
			c.cur.gates[e.key.gate] = e.interned
		}
	}
	if old.list != nil {
		c.keyBuf = listKey(c.keyBuf, old.Gates)
		if _, ok := c.cur.lists[string(c.keyBuf)]; !ok {
			c.cur.lists[string(c.keyBuf)] = old.list
		}
	}
	p := *old
	return &p
}
