package rtb

import "strconv"

// plainHead is a request head as bidguard writes it for a request without
// exchange headers, for tests and benchmarks of the client alone.
func plainHead(ua string, n int) []byte {
	return []byte("POST /bid HTTP/1.1\r\nHost: bidder\r\nUser-Agent: " + ua + "\r\nContent-Type: application/json\r\nX-Openrtb-Version: 2.6\r\nX-Forwarded-For: 127.0.0.1\r\nContent-Length: " + strconv.Itoa(n) + "\r\n\r\n")
}
