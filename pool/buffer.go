package pool

import "sync"

// Buffer is a pooled byte slice. Acquire it with AcquireBuffer and give it
// back with ReleaseBuffer; neither the Buffer nor B may be retained after
// release.
type Buffer struct {
	B []byte
}

// maxPooled is the largest capacity kept in the pool: bigger buffers (a rare
// large body) are left to the garbage collector so the pool does not pin them.
const maxPooled = 1 << 20

var buffers = sync.Pool{New: func() any { return new(Buffer) }}

// AcquireBuffer returns an empty Buffer from the pool.
func AcquireBuffer() *Buffer { return buffers.Get().(*Buffer) }

// ReleaseBuffer empties b and returns it to the pool.
func ReleaseBuffer(b *Buffer) {
	if cap(b.B) > maxPooled {
		b.B = nil
	}
	b.B = b.B[:0]
	buffers.Put(b)
}
