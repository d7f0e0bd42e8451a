package gates

// Reading one member of a raw JSON object (an `ext` the openrtb2 types keep as
// json.RawMessage) without decoding it. The input is a value the engine's
// decoder already accepted, so it is valid JSON; on anything else these
// functions return nil rather than fail. They allocate nothing.

// jsonMember returns the raw value of the member key of the JSON object obj,
// or nil when obj is not an object or has no such member. Keys match as
// encoding/json matches struct fields (ASCII case-insensitively), and the
// last match in document order wins. Keys written with escapes do not match.
func jsonMember(obj []byte, key string) []byte {
	i := jfSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	i++
	var found []byte
	for {
		i = jfSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return found // '}' or malformed
		}
		kEnd := jfString(obj, i)
		if kEnd < 0 {
			return found
		}
		k := obj[i+1 : kEnd-1]
		i = jfSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return found
		}
		vStart := jfSpace(obj, i+1)
		vEnd := jfValue(obj, vStart)
		if vEnd < 0 {
			return found
		}
		if jfEqualFold(k, key) {
			found = obj[vStart:vEnd]
		}
		i = jfSpace(obj, vEnd)
		if i >= len(obj) || obj[i] != ',' {
			return found
		}
		i++
	}
}

// jsonIsOne reports whether v is the JSON number 1 (1, 1.0, 1.00).
func jsonIsOne(v []byte) bool {
	if len(v) == 0 || v[0] != '1' {
		return false
	}
	if len(v) == 1 {
		return true
	}
	if v[1] != '.' || len(v) == 2 {
		return false
	}
	for _, c := range v[2:] {
		if c != '0' {
			return false
		}
	}
	return true
}

func jfSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// jfString returns the index after the string starting at b[i] == '"', or -1.
func jfString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// jfValue returns the index after the value starting at b[i], or -1.
func jfValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return jfString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = jfString(b, j)
				if j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

func jfEqualFold(a []byte, s string) bool {
	if len(a) != len(s) {
		return false
	}
	for i := range a {
		x, y := a[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
