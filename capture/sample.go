package capture

// Sampled reports whether the auction with request id id is captured at
// share (in [0, 1]: 0 never, 1 always). The choice depends on id and share
// only (see the package comment); it allocates nothing.
func Sampled(id string, share float64) bool {
	if share <= 0 {
		return false
	}
	if share >= 1 {
		return true
	}
	// The top 53 bits as a fraction of 2^53: exact in a float64.
	return float64(mix(fnv1a(id))>>11) < share*(1<<53)
}

// fnv1a is the 64-bit FNV-1a hash of s.
func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix is SplitMix64's finaliser: FNV-1a's high bits alone vary little
// between ids that differ in their last characters.
func mix(h uint64) uint64 {
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
