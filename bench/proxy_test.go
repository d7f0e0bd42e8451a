package bench

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// echoBidder answers POST /bid with the request body and a header, 204 on
// /nobid.
func echoBidder(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		if string(ctx.Path()) == "/nobid" {
			ctx.SetStatusCode(fasthttp.StatusNoContent)
			return
		}
		ctx.Response.Header.Set("X-Seen-Host", string(ctx.Host()))
		ctx.SetContentType("application/json")
		ctx.SetBody(ctx.PostBody())
	}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return ln.Addr().String()
}

func exercise(t *testing.T, base, upstream string) {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	for range 3 { // keep-alive reuse on both sides
		resp, err := c.Post(base+"/bid", "application/json", bytes.NewReader([]byte(`{"id":"1"}`)))
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, `{"id":"1"}`, string(body))
		require.Equal(t, upstream, resp.Header.Get("X-Seen-Host"))
	}
	resp, err := c.Post(base+"/nobid", "application/json", bytes.NewReader([]byte(`{}`)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
}

func TestFastProxyPassesThrough(t *testing.T) {
	up := echoBidder(t)
	p := NewFastProxy(up)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = p.Serve(ln) }()
	t.Cleanup(func() { _ = p.Server.Shutdown() })
	exercise(t, "http://"+ln.Addr().String(), up)
}

func TestStdProxyPassesThrough(t *testing.T) {
	up := echoBidder(t)
	srv := NewStdProxy(up)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	exercise(t, "http://"+ln.Addr().String(), up)
}

func TestFastProxyBidderDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	p := NewFastProxy(dead)
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = p.Serve(pl) }()
	t.Cleanup(func() { _ = p.Server.Shutdown() })
	resp, err := http.Post("http://"+pl.Addr().String()+"/bid", "application/json", bytes.NewReader([]byte(`{}`)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
}
