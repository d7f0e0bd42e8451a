package main

import (
	"fmt"
	"io"
)

// runServe is replaced by the sidecar's serve command (issue 6).
func runServe(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "bidguard serve: not built yet")
	return 2
}
