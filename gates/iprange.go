package gates

// The special-purpose address ranges urlSafety refuses (IANA's IPv4
// and IPv6 special-purpose registries), and the IPv6 ranges that
// embed an IPv4 address, which is then judged as IPv4. Lookups walk short
// tables: no allocation.

// addrClass is why an address is not a public one.
type addrClass uint8

const (
	addrPublic addrClass = iota
	addrPrivate
	addrLoopback
	addrLinkLocal
	addrShared
	addrMulticast
	addrReserved
	addrEmbedded // a special IPv4 address inside an IPv6 one
)

type ipv4Range struct {
	prefix uint32
	bits   uint8
	class  addrClass
}

// ipv4Ranges lists the special-purpose IPv4 ranges.
var ipv4Ranges = [...]ipv4Range{
	{0x00000000, 8, addrReserved},   // 0.0.0.0/8 "this network", unspecified
	{0x0a000000, 8, addrPrivate},    // 10.0.0.0/8
	{0x64400000, 10, addrShared},    // 100.64.0.0/10 CGNAT
	{0x7f000000, 8, addrLoopback},   // 127.0.0.0/8
	{0xa9fe0000, 16, addrLinkLocal}, // 169.254.0.0/16
	{0xac100000, 12, addrPrivate},   // 172.16.0.0/12
	{0xc0000000, 24, addrReserved},  // 192.0.0.0/24 IETF protocol assignments
	{0xc0000200, 24, addrReserved},  // 192.0.2.0/24 TEST-NET-1
	{0xc0586300, 24, addrReserved},  // 192.88.99.0/24 6to4 relay anycast
	{0xc0a80000, 16, addrPrivate},   // 192.168.0.0/16
	{0xc6120000, 15, addrReserved},  // 198.18.0.0/15 benchmarking
	{0xc6336400, 24, addrReserved},  // 198.51.100.0/24 TEST-NET-2
	{0xcb007100, 24, addrReserved},  // 203.0.113.0/24 TEST-NET-3
	{0xe0000000, 4, addrMulticast},  // 224.0.0.0/4
	{0xf0000000, 4, addrReserved},   // 240.0.0.0/4, 255.255.255.255 included
}

// classifyIPv4 returns the class of an IPv4 address.
func classifyIPv4(a uint32) addrClass {
	for _, r := range ipv4Ranges {
		if a>>(32-r.bits) == r.prefix>>(32-r.bits) {
			return r.class
		}
	}
	return addrPublic
}

type ipv6Range struct {
	prefix [16]byte
	bits   uint8
	class  addrClass
	// embed says where an embedded IPv4 address sits (embedNone: the range
	// has its own class).
	embed uint8
}

// Where an IPv6 range embeds an IPv4 address.
const (
	embedNone   uint8 = iota
	embedLast32       // bits 96-127: mapped, compatible, NAT64 /96
	embedNAT64L       // 64:ff9b:1::/48: bits 96-127, and bits 48-63 + 72-87 (RFC 6052 /48)
	embed6to4         // bits 16-47
	embedTeredo       // server bits 32-63, client bits 96-127 inverted
)

func v6(b ...byte) (a [16]byte) { copy(a[:], b); return a }

// ipv6Ranges lists the special-purpose IPv6 ranges, most specific first, with
// three ranges IANA also marks as not globally reachable (documented in the
// README): 100::/64 discard-only, 2001:2::/48 benchmarking and 3fff::/20
// documentation.
var ipv6Ranges = [...]ipv6Range{
	{v6(), 128, addrReserved, embedNone},                                               // ::/128 unspecified
	{v6(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1), 128, addrLoopback, embedNone}, // ::1/128
	{v6(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff), 96, addrPublic, embedLast32},        // ::ffff:0:0/96 mapped
	{v6(), 96, addrPublic, embedLast32},                                                // ::/96 compatible
	{v6(0, 0x64, 0xff, 0x9b), 96, addrPublic, embedLast32},                             // 64:ff9b::/96 NAT64
	{v6(0, 0x64, 0xff, 0x9b, 0, 1), 48, addrPublic, embedNAT64L},                       // 64:ff9b:1::/48 local NAT64
	{v6(0x01), 64, addrReserved, embedNone},                                            // 100::/64 discard-only
	{v6(0x20, 0x02), 16, addrPublic, embed6to4},                                        // 2002::/16 6to4
	{v6(0x20, 0x01, 0, 0x02), 48, addrReserved, embedNone},                             // 2001:2::/48 benchmarking
	{v6(0x20, 0x01), 32, addrPublic, embedTeredo},                                      // 2001::/32 Teredo
	{v6(0x20, 0x01, 0x0d, 0xb8), 32, addrReserved, embedNone},                          // 2001:db8::/32 documentation
	{v6(0x3f, 0xff), 20, addrReserved, embedNone},                                      // 3fff::/20 documentation
	{v6(0xfc), 7, addrPrivate, embedNone},                                              // fc00::/7 unique local
	{v6(0xfe, 0x80), 10, addrLinkLocal, embedNone},                                     // fe80::/10
	{v6(0xfe, 0xc0), 10, addrPrivate, embedNone},                                       // fec0::/10 site-local
	{v6(0xff), 8, addrMulticast, embedNone},                                            // ff00::/8
}

// inPrefix reports whether the first bits of a equal those of p.
func inPrefix(a, p *[16]byte, bits uint8) bool {
	n := int(bits / 8)
	for i := 0; i < n; i++ {
		if a[i] != p[i] {
			return false
		}
	}
	if r := bits % 8; r != 0 {
		m := byte(0xff << (8 - r))
		return a[n]&m == p[n]&m
	}
	return true
}

func be32(b0, b1, b2, b3 byte) uint32 {
	return uint32(b0)<<24 | uint32(b1)<<16 | uint32(b2)<<8 | uint32(b3)
}

// classifyIPv6 returns the class of an IPv6 address. An address in a range
// that embeds IPv4 is addrEmbedded when the embedded address is special,
// addrPublic otherwise.
func classifyIPv6(a *[16]byte) addrClass {
	for i := range ipv6Ranges {
		r := &ipv6Ranges[i]
		if !inPrefix(a, &r.prefix, r.bits) {
			continue
		}
		last := be32(a[12], a[13], a[14], a[15])
		var v4 [2]uint32
		n := 0
		switch r.embed {
		case embedNone:
			return r.class
		case embedLast32:
			v4[0], n = last, 1
		case embedNAT64L:
			v4[0], v4[1], n = last, be32(a[6], a[7], a[9], a[10]), 2
		case embed6to4:
			v4[0], n = be32(a[2], a[3], a[4], a[5]), 1
		case embedTeredo:
			v4[0], v4[1], n = be32(a[4], a[5], a[6], a[7]), ^last, 2
		}
		for _, x := range v4[:n] {
			if classifyIPv4(x) != addrPublic {
				return addrEmbedded
			}
		}
		return addrPublic
	}
	return addrPublic
}
