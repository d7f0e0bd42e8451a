package verdictcache

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"sync"
)

// Key names one cached verdict. Keys are equal only when the bytes they
// digest are (up to the collision bound in the package comment) and their
// versions are.
type Key struct {
	Lo, Hi uint64 // the 128-bit digest of the bytes
	// Version names everything besides the bytes that the verdict depends
	// on (the policy's version, the gate, the reading); compared exactly.
	Version uint64
}

// Hasher makes Keys under two random AES keys: GMAC's, and one that
// encrypts the tag. It is safe for concurrent use.
type Hasher struct {
	gmac  cipher.AEAD
	nonce [12]byte // fixed: see the package comment
	final cipher.Block
}

// tags holds the 16-byte buffers GMAC writes into: a buffer passed through
// the AEAD interface escapes, and a pooled one keeps Sum allocation-free.
var tags = sync.Pool{New: func() any { return new([16]byte) }}

// NewHasher returns a Hasher with fresh random keys.
func NewHasher() *Hasher {
	gmac, err := cipher.NewGCM(newAES())
	if err != nil {
		panic("verdictcache: " + err.Error()) // unreachable: AES has 16-byte blocks
	}
	return &Hasher{gmac: gmac, final: newAES()}
}

// newAES returns AES-128 under a random key.
func newAES() cipher.Block {
	var key [16]byte
	rand.Read(key[:]) // never fails (crypto/rand aborts the process instead)
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic("verdictcache: " + err.Error()) // unreachable: the key is 16 bytes
	}
	return block
}

// Sum returns the Key of b under version. It reads b once and does not
// retain it.
func (h *Hasher) Sum(version uint64, b []byte) Key {
	tag := tags.Get().(*[16]byte)
	h.gmac.Seal(tag[:0], h.nonce[:], nil, b)
	h.final.Encrypt(tag[:], tag[:])
	k := Key{
		Lo:      binary.LittleEndian.Uint64(tag[:8]),
		Hi:      binary.LittleEndian.Uint64(tag[8:]),
		Version: version,
	}
	tags.Put(tag)
	return k
}
