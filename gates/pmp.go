package gates

import "github.com/prebid/openrtb/v20/openrtb2"

// Private marketplace lookups shared by deal and floor (OpenRTB 2.6 §3.2.11
// Pmp, §3.2.12 Deal).

// findDeal returns the first deal of pmp whose id is id, or nil (also for a
// nil pmp or an empty id). It allocates nothing.
func findDeal(pmp *openrtb2.PMP, id string) *openrtb2.Deal {
	if pmp == nil || id == "" {
		return nil
	}
	for i := range pmp.Deals {
		if pmp.Deals[i].ID == id {
			return &pmp.Deals[i]
		}
	}
	return nil
}

// impPMP returns the imp's pmp, or nil for a nil imp.
func impPMP(imp *openrtb2.Imp) *openrtb2.PMP {
	if imp == nil {
		return nil
	}
	return imp.PMP
}
