// Package pool holds pooled per-request state shared by the bid path: byte
// buffers and the in-flight limiter. Stdlib only. Pooled values must not be
// retained after they are released.
package pool
