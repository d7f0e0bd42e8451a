//go:build !unix

package audit

import "os"

// lockFile does nothing where flock is not available: one process per log
// is then the operator's to ensure.
func lockFile(*os.File, bool) error { return nil }
