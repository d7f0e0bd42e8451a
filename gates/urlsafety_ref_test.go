package gates

import "bytes"

// The urlSafety gate as it was before its one-pass readings of the
// authority and the host and its filter of internal domains by last byte:
// the reference FuzzURLSafetyDifferential holds judge equal to.

// judgeBefore is urlSafety.judge as it was.
func judgeBefore(g *urlSafety, u string) urlWhy {
	if len(u) > g.maxURL {
		return whyTooLong
	}
	if w := urlCharacters(u); w != urlSafe {
		return w
	}
	colon, auth, userinfo, ok := urlAuthorityBefore(u)
	if !ok {
		return whyNotAbsolute
	}
	if scheme := u[:colon]; !(len(scheme) == 5 && markupNameIs(markupBytes(scheme), "https")) &&
		!(g.allowHTTP && len(scheme) == 4 && markupNameIs(markupBytes(scheme), "http")) {
		return whyScheme
	}
	if userinfo {
		return whyUserinfo
	}
	host, ok := splitHostPort(auth)
	if !ok {
		return whyBadHost
	}
	var buf [maxHostBytes]byte
	h, ok := parseHostBefore(host, &buf)
	switch {
	case !ok:
		return whyBadHost
	case h.kind == hostIPv4:
		return addrWhy[classifyIPv4(h.ip4)]
	case h.kind == hostIPv6:
		w := addrWhy[classifyIPv6(&h.ip6)]
		if w == urlSafe && h.zone {
			// Zones belong to link-local and multicast scopes; WHATWG
			// rejects them.
			return whyBadHost
		}
		return w
	}
	if internalNameBefore(g, h.name) {
		return whyInternalName
	}
	return urlSafe
}

// urlAuthorityBefore is urlAuthority as it was: two passes.
func urlAuthorityBefore(u string) (colon int, auth string, userinfo, ok bool) {
	if len(u) == 0 || !isASCIIAlpha(u[0]) {
		return 0, "", false, false
	}
	i := 1
	for i < len(u) && isSchemeChar(u[i]) {
		i++
	}
	if i >= len(u) || u[i] != ':' {
		return 0, "", false, false
	}
	colon = i
	i++
	for i < len(u) && (u[i] == '/' || u[i] == '\\') {
		i++
	}
	rest := u[i:]
	end := len(rest)
	for j := 0; j < len(rest); j++ {
		c := rest[j]
		if c == '/' || c == '?' || c == '#' {
			break
		}
		if c == '@' {
			userinfo = true
			break
		}
	}
	for j := 0; j < len(rest); j++ {
		if c := rest[j]; c == '/' || c == '\\' || c == '?' || c == '#' {
			end = j
			break
		}
	}
	return colon, rest[:end], userinfo, true
}

// parseHostBefore is parseHost as it was: decoded, then checked label by label.
func parseHostBefore(raw string, buf *[maxHostBytes]byte) (h parsedHost, ok bool) {
	if raw == "" {
		return h, false
	}
	if raw[0] == '[' {
		if raw[len(raw)-1] != ']' {
			return h, false
		}
		h.kind = hostIPv6
		h.ip6, h.zone, ok = parseIPv6Zone(raw[1 : len(raw)-1])
		return h, ok
	}
	// Percent-decode and lower-case into buf.
	n, ascii := 0, true
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c == '%' && i+2 < len(raw) {
			hi, ok1 := markupUnhex(raw[i+1])
			lo, ok2 := markupUnhex(raw[i+2])
			if ok1 && ok2 {
				c = hi<<4 | lo
				i += 2
			}
		}
		if n == len(buf) {
			return h, false
		}
		if c >= 0x80 {
			ascii = false
		}
		buf[n] = markupLower(c)
		n++
	}
	name := buf[:n]
	if !ascii {
		d, valid := normalizeDomain(string(name))
		if !valid || len(d) > len(buf) || !isASCII(d) {
			return h, false
		}
		name = buf[:copy(buf[:], d)]
	}
	for _, c := range name {
		if !isLDH(c) && c != '_' && c != '.' {
			return h, false
		}
	}
	if endsInNumber(name) {
		h.kind = hostIPv4
		h.ip4, ok = parseIPv4(name)
		return h, ok
	}
	if !validHostName(name) {
		return h, false
	}
	h.kind, h.name = hostName, name
	return h, true
}

// internalNameBefore is urlSafety.internalName as it was: every internal domain tried.
func internalNameBefore(g *urlSafety, name []byte) bool {
	if len(name) > 0 && name[len(name)-1] == '.' {
		name = name[:len(name)-1]
	}
	if bytes.IndexByte(name, '.') < 0 {
		return true
	}
	for _, d := range internalDomains {
		if hostUnder(name, d) {
			return true
		}
	}
	if g.internal.len() == 0 {
		return false
	}
	for d := name; len(d) > 0; {
		if _, ok := g.internal.m[string(d)]; ok {
			return true
		}
		i := 0
		for i < len(d) && d[i] != '.' {
			i++
		}
		if i == len(d) {
			break
		}
		d = d[i+1:]
	}
	return false
}
