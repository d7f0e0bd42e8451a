package gates

// dsa (IAB Tech Lab DSA Transparency extension for OpenRTB 2.5 and 2.6:
// regs.ext.dsa in the request, bid.ext.dsa in the bid; some exchanges send
// the request object as regs.dsa): when the request requires DSA
// transparency (dsarequired 2 or 3), every bid must carry bid.ext.dsa, its
// behalf and paid must be at most 100 characters (code points, after JSON
// unescaping), and its adrender must not conflict with the request's
// pubrender (both 0: nobody renders the notice; pubrender 2 and adrender 1:
// both do). An absent pubrender or adrender never conflicts. Codes 200 / 300.
//
// The openrtb2 types have no dsa field: the gate reads the raw ext bytes
// (and, for regs.dsa, the raw request) with jsonraw's allocation-free
// readers. The request object is regs.ext.dsa when that is an object, else
// regs.dsa.

import (
	"github.com/bidguard/bidguard/engine"
	"github.com/bidguard/bidguard/jsonraw"
)

// dsaMaxText is the longest behalf or paid, in code points.
const dsaMaxText = 100

// Reasons of dsa.
const (
	reasonNoDSA       = "no dsa in request"
	reasonDSAMissing  = "missing dsa transparency"
	reasonDSAInvalid  = "invalid dsa transparency"
	reasonDSAConflict = "dsa render conflict"
)

type dsa struct{}

var dsaFactory = engine.Factory{
	Name: "dsa", ResultName: "rtb.dsa", Kind: engine.PerBid,
	New: func(any, engine.Env) (engine.Gate, error) { return &dsa{}, nil },
}

func (g *dsa) Kind() engine.Kind { return engine.PerBid }

// Prepare skips a request that does not require DSA transparency: no dsa
// object, or dsarequired absent, not an integer, or other than 2 and 3.
func (g *dsa) Prepare(in *engine.Input) string {
	req, _ := requestDSA(in)
	if req != 2 && req != 3 {
		return reasonNoDSA
	}
	return ""
}

// CheckBid judges the bid's ext.dsa. It runs only when Prepare found the
// requirement, so a missing object always fails.
func (g *dsa) CheckBid(in *engine.Input, b *engine.Bid) engine.Verdict {
	v, ok := jsonraw.Lookup(b.Ext, "dsa")
	if !ok || jsonraw.IsNull(v) {
		return engine.Reject(reasonDSAMissing, engine.LossCreativeFilteredGeneral, engine.NBRResponseRejectedGeneral)
	}
	m, isObj := jsonraw.Object(v)
	if !isObj {
		return engine.Reject(reasonDSAInvalid, engine.LossCreativeFilteredGeneral, engine.NBRResponseRejectedGeneral)
	}
	var behalf, paid, adrender []byte
	for {
		k, val, more := m.Next()
		if !more {
			break
		}
		switch {
		case jsonraw.KeyIs(k, "behalf"):
			behalf = val
		case jsonraw.KeyIs(k, "paid"):
			paid = val
		case jsonraw.KeyIs(k, "adrender"):
			adrender = val
		}
	}
	if !dsaTextValid(behalf) || !dsaTextValid(paid) {
		return engine.Reject(reasonDSAInvalid, engine.LossCreativeFilteredGeneral, engine.NBRResponseRejectedGeneral)
	}
	ad, ok := jsonraw.Int(adrender)
	if !ok || (ad != 0 && ad != 1) {
		return engine.Pass()
	}
	// The request's pubrender is read again here rather than kept from
	// Prepare: a gate holds no per-request state (see README).
	_, pub := requestDSA(in)
	if (pub == 0 && ad == 0) || (pub == 2 && ad == 1) {
		return engine.Reject(reasonDSAConflict, engine.LossCreativeFilteredGeneral, engine.NBRResponseRejectedGeneral)
	}
	return engine.Pass()
}

// dsaTextValid accepts an absent or null value and a string of at most
// dsaMaxText code points; any other type is invalid.
func dsaTextValid(v []byte) bool {
	if v == nil || jsonraw.IsNull(v) {
		return true
	}
	n, ok := jsonraw.StringLen(v)
	return ok && n <= dsaMaxText
}

// requestDSA returns the request's dsarequired and pubrender, each -1 when
// absent or not an integer. The object read is regs.ext.dsa when that is an
// object, else regs.dsa (captured by the decoder: openrtb2.Regs has no field
// for it). Both are read from bytes already accepted by the decoder.
func requestDSA(in *engine.Input) (required, pubrender int64) {
	regs := in.Request.Regs
	if regs == nil {
		return -1, -1
	}
	obj, ok := jsonraw.Lookup(regs.Ext, "dsa")
	if _, isObj := jsonraw.Object(obj); !ok || !isObj {
		obj = in.RegsDSA
	}
	m, isObj := jsonraw.Object(obj)
	if !isObj {
		return -1, -1
	}
	var req, pub []byte
	for {
		k, val, more := m.Next()
		if !more {
			break
		}
		switch {
		case jsonraw.KeyIs(k, "dsarequired"):
			req = val
		case jsonraw.KeyIs(k, "pubrender"):
			pub = val
		}
	}
	required, pubrender = -1, -1
	if n, ok := jsonraw.Int(req); ok {
		required = n
	}
	if n, ok := jsonraw.Int(pub); ok {
		pubrender = n
	}
	return required, pubrender
}

var _ engine.BidGate = (*dsa)(nil)
