package bench

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/valyala/fasthttp"
)

// Limits shared by the baseline proxies, so each is configured as a
// production pass-through would be: bounded bodies, bounded time, pooled
// keep-alive connections to the bidder.
const (
	maxBody      = 1 << 20
	proxyTimeout = 2 * time.Second
	idleTimeout  = 30 * time.Second
	maxConns     = 1024
)

// FastProxy is the bare fasthttp pass-through: the exchange's request is
// sent as is (Host rewritten) to the upstream over pooled keep-alive
// connections, and the bidder's answer comes back as is. No decoding, no
// validation: the floor of what any fasthttp proxy costs.
type FastProxy struct {
	client *fasthttp.HostClient
	Server *fasthttp.Server
}

// NewFastProxy proxies to upstream ("host:port").
func NewFastProxy(upstream string) *FastProxy {
	p := &FastProxy{client: &fasthttp.HostClient{
		Addr: upstream, MaxConns: maxConns, MaxIdleConnDuration: idleTimeout,
		ReadTimeout: proxyTimeout, WriteTimeout: proxyTimeout, MaxResponseBodySize: maxBody,
		NoDefaultUserAgentHeader: true, DisablePathNormalizing: true,
		RetryIfErr: func(*fasthttp.Request, int, error) (bool, bool) { return false, false }, // a bid POST goes out once
	}}
	p.Server = &fasthttp.Server{Handler: p.handle, Name: "bench-fastproxy", MaxRequestBodySize: maxBody,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 90 * time.Second, CloseOnShutdown: true}
	return p
}

func (p *FastProxy) handle(ctx *fasthttp.RequestCtx) {
	req := &ctx.Request
	req.Header.Del("Connection")
	req.SetHost(p.client.Addr)
	if err := p.client.DoTimeout(req, &ctx.Response, proxyTimeout); err != nil {
		ctx.ResetBody()
		ctx.SetStatusCode(fasthttp.StatusBadGateway)
		return
	}
	ctx.Response.Header.Del("Connection")
}

// Serve serves on ln until Shutdown.
func (p *FastProxy) Serve(ln net.Listener) error { return p.Server.Serve(ln) }

// NewStdProxy is net/http/httputil's ReverseProxy to upstream ("host:port")
// with a transport that keeps enough idle connections for the load (the
// default keeps 2 per host, which would measure connection churn, not the
// proxy).
func NewStdProxy(upstream string) *http.Server {
	target := &url.URL{Scheme: "http", Host: upstream}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	rp.Transport = &http.Transport{
		Proxy: nil, MaxIdleConns: maxConns, MaxIdleConnsPerHost: maxConns, IdleConnTimeout: idleTimeout,
		ResponseHeaderTimeout: proxyTimeout, DialContext: (&net.Dialer{Timeout: proxyTimeout}).DialContext,
	}
	return &http.Server{Handler: http.MaxBytesHandler(rp, maxBody), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 90 * time.Second}
}
