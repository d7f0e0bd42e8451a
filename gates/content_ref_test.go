package gates

// findBytewise is phraseSet.find as it was before the word-at-a-time scan:
// every byte tested against start, then skip. The differential tests hold
// find equal to it (and to the plain walk, refFind).
func findBytewise(ps *phraseSet, s []byte) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !ps.start[c] || c < 0x80 && ps.skip(s, i) {
			continue
		}
		if p := ps.matchAt(s, i); p >= 0 {
			return ps.reasons[p]
		}
	}
	return ""
}
