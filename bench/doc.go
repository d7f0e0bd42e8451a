// Package bench holds cross-package benchmarks and the side-by-side
// comparison runner.
package bench
