// Package bench holds cross-package benchmarks and the baseline proxies of
// the side-by-side comparison: a bare fasthttp pass-through (FastProxy) and
// net/http/httputil's ReverseProxy (StdProxy). The comparison runner is the
// command in bench/run (`make compare`); bench/README.md has its latest
// table and how to reproduce it.
package bench
