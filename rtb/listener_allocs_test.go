//go:build !race

package rtb

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/engine"
)

// TestConnReadAllocs: reading a request through the exchange connection
// (recvmsg with its timestamp, the framer, the arrival lookup) allocates
// nothing.
func TestConnReadAllocs(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	enableTimestamps(ln)
	srv, err := New(&engine.Holder{}, Options{})
	require.NoError(t, err)
	cl, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer cl.Close()
	nc, err := ln.Accept()
	require.NoError(t, err)
	c := srv.newConn(nc)
	defer c.Close()
	req := []byte(smuggled)
	buf := make([]byte, 4096)
	k := uint64(0)
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if _, err := cl.Write(req); err != nil {
			t.Fatal(err)
		}
		n := 0
		for n < len(req) {
			m, err := c.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			n += m
		}
		k++
		if _, ok := c.arrival(k); !ok {
			t.Fatal("no arrival")
		}
	}))
}

func TestPeekTmaxAllocs(t *testing.T) {
	body := []byte(`{"id":"a","imp":[{"id":"1"}],"tmax":120,"TMAX":"x"}`)
	var rec members
	require.Zero(t, testing.AllocsPerRun(100, func() { _, _ = peekTmax(body, &rec) }))
}
