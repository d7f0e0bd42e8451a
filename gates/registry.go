package gates

import "github.com/bidguard/bidguard/engine"

// Builtin returns the registry of every built-in gate. The list is explicit:
// no init() registration. Keep it sorted by factory name, one line per gate.
func Builtin() engine.Registry {
	list := []engine.Factory{
		adomainVerifyFactory,
		audienceSafetyFactory,
		badvComplianceFactory,
		bappComplianceFactory,
		battrComplianceFactory,
		bcatComplianceFactory,
		bidSanityFactory,
		contentFactory,
		creativeSizeFactory,
		currencyFactory,
		dealFactory,
		dsaFactory,
		filesystemFactory,
		floorFactory,
		impidMatchFactory,
		latencyFactory,
		markupSafetyFactory,
		mediaTypeFactory,
		piiFactory,
		podComplianceFactory,
		quarantineFactory,
		requiredFieldsFactory,
		responseIDFactory,
		schemaFactory,
		seatPolicyFactory,
		secureMarkupFactory,
		tmaxGuardFactory,
		uniqueBidIDFactory,
		urlSafetyFactory,
		videoComplianceFactory,
	}
	r := make(engine.Registry, len(list))
	for _, f := range list {
		r[f.Name] = f
	}
	return r
}
