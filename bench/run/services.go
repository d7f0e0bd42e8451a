package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/bidguard/bidguard/configs"
)

// service is one thing the attacks target.
type service struct {
	name string
	url  string // where the attack POSTs
	pgid int    // the process group whose CPU time is the target's
}

// Target names, in the table's order.
const (
	tDirect   = "direct"
	tFast     = "fasthttp proxy"
	tNginx    = "nginx"
	tHTTPUtil = "httputil"
	tBidguard = "bidguard"
	// tBidguardTLS is bidguard reaching the bidder over TLS (a private CA,
	// a client certificate), next to the plain row.
	tBidguardTLS = "bidguard, TLS upstream"
	tBaseline    = "bidguard baseline" // compare -baseline: an earlier build, for before/after tables
)

// fileName is a target's name as it appears in file names.
func fileName(target string) string { return strings.NewReplacer(" ", "-", ",", "").Replace(target) }

// env is what every command needs: the binaries, the children, the request
// used for readiness probes.
type env struct {
	bin   string // directory with bidguard and loadtest
	self  string // this executable, for `benchrun proxy`
	procs *procs
	probe []byte // a bid request body
	// seatsDir, when set, is the seatsDir (absolute) of every bidguard
	// started: seat policies for `badmix -seats-dir`.
	seatsDir string
}

// postProbe POSTs the probe body and wants a 2xx.
func (e *env) postProbe(url string) func() error {
	return func() error {
		c := http.Client{Timeout: time.Second}
		resp, err := c.Post(url, "application/json", bytes.NewReader(e.probe))
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s: status %d", url, resp.StatusCode)
		}
		return nil
	}
}

func getOK(url string) func() error {
	return func() error {
		c := http.Client{Timeout: time.Second}
		resp, err := c.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: status %d", url, resp.StatusCode)
		}
		return nil
	}
}

// startBidder starts `loadtest bidder` with extra flags and returns its
// address and process group.
func (e *env) startBidder(ctx context.Context, extra ...string) (string, int, error) {
	port, err := freePort()
	if err != nil {
		return "", 0, err
	}
	addr := loopback(port)
	argv := append([]string{filepath.Join(e.bin, "loadtest"), "bidder", "-listen", addr}, extra...)
	c, err := e.procs.start("bidder", argv...)
	if err != nil {
		return "", 0, err
	}
	return addr, c.pid(), waitReady(ctx, c, getOK("http://"+addr+"/counts"))
}

// bidderRequests is the number of bid requests the fake bidder at addr has
// received (GET /counts).
func bidderRequests(addr string) (int64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/counts")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("bidder /counts: status %d", resp.StatusCode)
	}
	var counts struct {
		Requests *int64 `json:"requests"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&counts); err != nil {
		return 0, fmt.Errorf("bidder /counts: %w", err)
	}
	if counts.Requests == nil {
		return 0, errors.New("bidder /counts: no requests count")
	}
	return *counts.Requests, nil
}

// startProxy starts a baseline proxy of bench (`benchrun proxy`).
func (e *env) startProxy(ctx context.Context, name, impl, bidder string) (service, error) {
	port, err := freePort()
	if err != nil {
		return service{}, err
	}
	c, err := e.procs.start(impl+"-proxy", e.self, "proxy", "-impl", impl, "-listen", loopback(port), "-upstream", bidder)
	if err != nil {
		return service{}, err
	}
	s := service{name: name, url: "http://" + loopback(port) + "/bid", pgid: c.pid()}
	return s, waitReady(ctx, c, e.postProbe(s.url))
}

// upstreamSpec is the bidder a bidguard reaches: its URL and, for an
// https one, the files of the tls block.
type upstreamSpec struct {
	url string
	tls *tlsFiles
}

// plainUpstream is the fake bidder at addr over plain HTTP.
func plainUpstream(addr string) upstreamSpec { return upstreamSpec{url: "http://" + addr + "/bid"} }

// startBidguard starts the bidguard binary (bin/bidguard, or an earlier
// build for compare -baseline) as service name: serve with the embedded
// config, its listeners and upstream replaced (see bidguardConfig). It
// returns the service and the admin /metrics URL.
func (e *env) startBidguard(ctx context.Context, name, binary string, up upstreamSpec) (service, string, error) {
	port, err := freePort()
	if err != nil {
		return service{}, "", err
	}
	admin, err := freePort()
	if err != nil {
		return service{}, "", err
	}
	cfg, err := bidguardConfig(loopback(port), loopback(admin), up, e.seatsDir)
	if name == tBaseline {
		// An earlier build knows only its own keys: it gets the keys set
		// here and runs its own embedded defaults and default policy.
		cfg, err = baselineConfig(loopback(port), loopback(admin), up, e.seatsDir)
	}
	if err != nil {
		return service{}, "", err
	}
	file := fileName(name)
	path := filepath.Join(e.procs.dir, file+".yaml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return service{}, "", err
	}
	c, err := e.procs.start(file, binary, "serve", "--config", path)
	if err != nil {
		return service{}, "", err
	}
	s := service{name: name, url: "http://" + loopback(port) + "/bid", pgid: c.pid()}
	adminURL := "http://" + loopback(admin)
	if err := waitReady(ctx, c, getOK(adminURL+"/readyz")); err != nil {
		return service{}, "", err
	}
	return s, adminURL + "/metrics", nil
}

// bidguardConfig is the embedded configs/bidguard.yaml (so the default
// policy is exactly the embedded one) with listen, adminListen and
// upstreams replaced (with a tls block for up.tls), and seatsDir set when
// not empty.
func bidguardConfig(listen, admin string, up upstreamSpec, seatsDir string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(configs.Default, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("embedded config: not a mapping")
	}
	root := doc.Content[0]
	var ups yaml.Node
	entry := map[string]any{"name": "bench", "url": up.url, "path": "/"}
	if up.tls != nil {
		entry["tls"] = map[string]string{"caFile": up.tls.ca, "certFile": up.tls.clientCert, "keyFile": up.tls.clientKey}
	}
	if err := ups.Encode([]map[string]any{entry}); err != nil {
		return nil, err
	}
	set := map[string]*yaml.Node{
		"listen":      {Kind: yaml.ScalarNode, Value: listen},
		"adminListen": {Kind: yaml.ScalarNode, Value: admin},
		"upstreams":   &ups,
	}
	if seatsDir != "" {
		set["seatsDir"] = &yaml.Node{Kind: yaml.ScalarNode, Value: seatsDir}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if v, ok := set[root.Content[i].Value]; ok {
			root.Content[i+1] = v
			delete(set, root.Content[i].Value)
		}
	}
	for k, v := range set {
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
	}
	return yaml.Marshal(&doc)
}

// baselineConfig sets only listen, adminListen, upstreams and seatsDir:
// every other key takes the running build's default, the policy its
// embedded default policy.
func baselineConfig(listen, admin string, up upstreamSpec, seatsDir string) ([]byte, error) {
	if up.tls != nil {
		return nil, errors.New("the baseline build is measured against the plain upstream only")
	}
	doc := map[string]any{"listen": listen, "adminListen": admin,
		"upstreams": []map[string]any{{"name": "bench", "url": up.url, "path": "/"}}}
	if seatsDir != "" {
		doc["seatsDir"] = seatsDir
	}
	return yaml.Marshal(doc)
}

// nginxConf is nginx as a plain keep-alive reverse proxy: auto workers,
// upstream keep-alive, request and answer bodies buffered in memory, no
// access log, everything under dir, loopback only.
var nginxConf = template.Must(template.New("nginx").Parse(`daemon off;
worker_processes auto;
pid {{.Dir}}/nginx.pid;
error_log {{.Dir}}/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path {{.Dir}}/body;
  proxy_temp_path {{.Dir}}/proxy;
  fastcgi_temp_path {{.Dir}}/fastcgi;
  uwsgi_temp_path {{.Dir}}/uwsgi;
  scgi_temp_path {{.Dir}}/scgi;
  client_body_buffer_size 256k;
  client_max_body_size 256k;
  keepalive_requests 1000000;
  keepalive_timeout 90s;
  upstream bidder {
    server {{.Bidder}};
    keepalive 256;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
  }
  server {
    listen {{.Listen}};
    location / {
      proxy_pass http://bidder;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffer_size 16k;
      proxy_buffers 8 16k;
    }
  }
}
`))

// findNginx returns nginx's path, or "" with what to do: compare leaves
// nginx out rather than install it (make bench-deps does).
func findNginx() (string, string) {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p, ""
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx", ""
	}
	return "", "nginx is not installed: run make bench-deps (Debian's nginx, as root) or put nginx on PATH to measure it"
}

// startNginx writes the config into a directory of its own and runs nginx
// in the foreground (daemon off) as a child.
func (e *env) startNginx(ctx context.Context, nginx, bidder string) (service, error) {
	port, err := freePort()
	if err != nil {
		return service{}, err
	}
	dir := filepath.Join(e.procs.dir, "nginx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return service{}, err
	}
	var conf bytes.Buffer
	if err := nginxConf.Execute(&conf, map[string]string{"Dir": dir, "Bidder": bidder, "Listen": loopback(port)}); err != nil {
		return service{}, err
	}
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, conf.Bytes(), 0o644); err != nil {
		return service{}, err
	}
	c, err := e.procs.start("nginx", nginx, "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", path)
	if err != nil {
		return service{}, err
	}
	s := service{name: tNginx, url: "http://" + loopback(port) + "/bid", pgid: c.pid()}
	return s, waitReady(ctx, c, e.postProbe(s.url))
}

func nginxVersion(nginx string) string {
	out, _ := exec.Command(nginx, "-v").CombinedOutput()
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "nginx version: ")
}
