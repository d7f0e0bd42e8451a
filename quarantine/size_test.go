package quarantine

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The seat's state is constant: what doc.go says it weighs.
func TestSeatSize(t *testing.T) {
	n := unsafe.Sizeof(Seat{})
	t.Logf("Seat: %d bytes", n)
	require.Less(t, n, uintptr(5<<10))
}
