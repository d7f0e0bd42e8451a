package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bidguard/bidguard/internal/testserve"
)

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

func runCmd(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func files(t *testing.T, kv ...string) string {
	dir := t.TempDir()
	for i := 0; i+1 < len(kv); i += 2 {
		require.NoError(t, writeFile(filepath.Join(dir, kv[i]), kv[i+1]))
	}
	return dir
}

const goodReq = `{"id":"r1","tmax":100,"imp":[{"id":"1","bidfloor":0.5}]}`

func TestCheckExitCodes(t *testing.T) {
	dir := files(t,
		"req.json", goodReq,
		"ok.json", `{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"1","price":1,"crid":"c","adomain":["brand.com"],"adm":"<b>hi</b>"}]}]}`,
		"bad.json", `{"id":"r1","seatbid":[{"seat":"s","bid":[{"id":"b1","impid":"7","price":1}]}]}`,
		"typed.json", `{"id":"r1","seatbid":[{"bid":[{"id":"b1","impid":"1","price":"1"}]}]}`,
		"malformed.json", `{"id":`,
		"big.json", `{"id":"r1","ext":"`+strings.Repeat("x", 300)+`"}`,
		"small.yaml", "limits: {maxResponseBytes: 100}\n",
		"broken.yaml", "policy: {gates: [{gate: nope}]}\n",
	)
	p := func(n string) string { return filepath.Join(dir, n) }

	code, out, errOut := runCmd("check", "--request", p("req.json"), "--response", p("ok.json"))
	require.Equal(t, 0, code, errOut)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, true, rep["passed"])
	require.Equal(t, "forward", rep["action"])
	for _, k := range []string{"gates", "rejected", "warned", "response"} {
		require.Contains(t, rep, k)
	}

	code, out, _ = runCmd("check", "--request", p("req.json"), "--response", p("bad.json"))
	require.Equal(t, 1, code)
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "no-bid", rep["action"])
	require.Nil(t, rep["response"])
	rej := rep["rejected"].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"seat": "s", "bid_id": "b1", "impid": "7", "gate": "rtb.impid-match",
		"reason": "bid impid not present in request", "loss": 3.0, "nbr": 300.0}, rej)

	exit2 := func(wantPrefix string, args ...string) {
		t.Helper()
		code, out, errOut := runCmd(append([]string{"check"}, args...)...)
		require.Equal(t, 2, code, errOut)
		require.Empty(t, out)
		require.Equal(t, 1, strings.Count(errOut, "\n"), errOut)
		require.True(t, strings.HasPrefix(errOut, wantPrefix), errOut)
	}
	exit2(p("typed.json")+": ", "--request", p("req.json"), "--response", p("typed.json"))
	exit2(p("malformed.json")+": ", "--request", p("req.json"), "--response", p("malformed.json"))
	exit2(p("malformed.json")+": ", "--request", p("malformed.json"), "--response", p("ok.json"))
	exit2(p("missing.json")+": ", "--request", p("req.json"), "--response", p("missing.json"))
	exit2(p("big.json")+": ", "--request", p("req.json"), "--response", p("big.json"), "--config", p("small.yaml"))
	exit2(p("broken.yaml")+": ", "--request", p("req.json"), "--response", p("ok.json"), "--config", p("broken.yaml"))
	exit2("check: ", "--request", p("req.json"))
	exit2("check: ", "--request", p("req.json"), "--response", p("ok.json"), "--elapsed-ms", "-1")
	exit2("check: ", "--request", p("req.json"), "--response", p("ok.json"), "--elapsed-ms", "1.5")
	exit2("check: ", "--request", p("req.json"), "--response", p("ok.json"), "--latency-ms", "-3")
	exit2("check: ", "--request", p("req.json"), "--response", p("ok.json"), "--bogus")
}

func TestCheckFrozenClockAndLatency(t *testing.T) {
	dir := files(t,
		"req.json", goodReq,
		"resp.json", `{"id":"r1","seatbid":[{"bid":[{"id":"b1","impid":"1","price":1}]}]}`,
		"lat.yaml", "policy:\n  gates: [{gate: tmaxGuard}, {gate: latency, options: {maxMs: 50}}]\n",
	)
	p := func(n string) string { return filepath.Join(dir, n) }
	base := []string{"check", "--request", p("req.json"), "--response", p("resp.json"), "--config", p("lat.yaml")}
	code, _, _ := runCmd(append(base, "--elapsed-ms", "90", "--latency-ms", "50")...)
	require.Equal(t, 0, code)
	code, out, _ := runCmd(append(base, "--elapsed-ms", "91")...)
	require.Equal(t, 1, code)
	require.Contains(t, out, "tmax budget exhausted (4ms left, buffer 5ms)")
	code, out, _ = runCmd(append(base, "--latency-ms", "51")...)
	require.Equal(t, 1, code)
	require.Contains(t, out, "latency 51ms exceeds 50ms threshold")
}

func TestConfigValidate(t *testing.T) {
	dir := files(t,
		"good.yaml", "policy:\n  gates: [{gate: impidMatch}]\nseats:\n  acme: {addGates: [{gate: bidSanity, options: {maxPrice: 3}}]}\n",
		"bad.yaml", "policy:\n  gates: [{gate: impidMatch, mode: loud}, {gate: latency}]\nextra: 1\n",
		"none.yaml", "policy:\n  gates: []\n",
		"upstream.yaml", "upstreams: [{name: a, url: 'http://127.0.0.1:9000/bid'}]\n",
	)
	code, out, _ := runCmd("config", "validate", "--config", filepath.Join(dir, "good.yaml"))
	require.Equal(t, 0, code)
	require.Contains(t, out, "acme")
	require.Contains(t, out, "rtb.bid-sanity")
	code, out, errOut := runCmd("config", "validate", "--config", filepath.Join(dir, "none.yaml"))
	require.Equal(t, 0, code, "gates: [] is valid")
	require.Contains(t, errOut, "warning: policy.gates is empty")
	require.Contains(t, out, "(no gates)")
	code, out, errOut = runCmd("config", "validate", "--config", filepath.Join(dir, "upstream.yaml"))
	require.Equal(t, 0, code)
	require.Empty(t, errOut)
	require.Contains(t, out, "rtb.tmax-guard", "a file without policy.gates runs the default policy's gates")
	code, _, errOut = runCmd("config", "validate", "--config", filepath.Join(dir, "bad.yaml"))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `unknown key "extra"`)
	// An upstream URL serve would refuse is refused here too.
	dir2 := files(t, "url.yaml", "upstreams: [{name: a, url: 'http://u:p@127.0.0.1:1/', onError: loud}]\n")
	code, _, errOut = runCmd("config", "validate", "--config", filepath.Join(dir2, "url.yaml"))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "upstreams[0].url")
	require.Contains(t, errOut, "credentials in the URL are not supported")
	require.Contains(t, errOut, `upstreams[0].onError: "loud" is not nobid or status`)
	code, _, _ = runCmd("config", "validate", "--config", filepath.Join(dir, "nope.yaml"))
	require.Equal(t, 2, code)
	code, _, _ = runCmd("config", "validate", "--bogus")
	require.Equal(t, 2, code)
	code, out, _ = runCmd("config", "validate")
	require.Equal(t, 0, code, "the embedded config is valid")
	require.Contains(t, out, "rtb.tmax-guard")
	require.NotContains(t, out, "rtb.video-compliance", "not in the default policy")
	require.NotContains(t, out, "rtb.pod-compliance", "not in the default policy")
}

// TestConfigValidateCTV: the CTV example seat file's gates are listed,
// and their options are validated at load.
func TestConfigValidateCTV(t *testing.T) {
	seats, err := filepath.Abs(filepath.Join("..", "..", "configs", "seats"))
	require.NoError(t, err)
	dir := files(t,
		"ctv.yaml", "seatsDir: "+seats+"\n",
		"bad.yaml", "policy:\n  gates:\n    - {gate: videoCompliance, options: {onMissingRate: skip}}\n    - {gate: podCompliance, options: {podFit: some, exclusive: [crid]}}\n",
	)
	code, out, errOut := runCmd("config", "validate", "--config", filepath.Join(dir, "ctv.yaml"))
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "ctv-dsp")
	require.Contains(t, out, "rtb.video-compliance")
	require.Contains(t, out, "rtb.pod-compliance")
	code, _, errOut = runCmd("config", "validate", "--config", filepath.Join(dir, "bad.yaml"))
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "onMissingRate must be fail or pass")
	require.Contains(t, errOut, "exclusive[0] must be adomain or cat")
	require.Contains(t, errOut, "podFit must be each or all")
}

// config validate lists every error of a file in one pass: the keys
// checked without the gate registry, the gates' options, wrong types with
// their key path, listen addresses.
func TestConfigValidateOnePass(t *testing.T) {
	dir := files(t, "t2.yaml", `listen: 127.0.0.1:99999
upstreams: [{name: a, url: 'http://127.0.0.1:1/', onError: loud}]
policy:
  action: block
  gates:
    - {gate: bidSanity, options: {maxPrice: -1}}
    - gate: latency
      options: {maxMs: twenty}
`)
	code, out, errOut := runCmd("config", "validate", "--config", filepath.Join(dir, "t2.yaml"))
	require.Equal(t, 1, code)
	require.Empty(t, out)
	p := filepath.Join(dir, "t2.yaml")
	for _, want := range []string{
		p + `: listen: "127.0.0.1:99999": port 99999 is not in 1-65535`,
		p + `: upstreams[0].onError: "loud" is not nobid or status`,
		p + `: policy.action: "block" is not enforce or shadow`,
		p + `:6: policy.gates[0] (bidSanity): maxPrice must be > 0 and finite`,
		p + `:8: policy.gates[1].options.maxMs: want a number, got "twenty"`,
	} {
		require.Contains(t, errOut, want+"\n")
	}
	require.Equal(t, 5, strings.Count(errOut, "\n"), errOut)

	code, _, errOut = runCmd("config", "validate")
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "warning: no upstreams configured")
}

func TestVersion(t *testing.T) {
	code, out, _ := runCmd("version")
	require.Equal(t, 0, code)
	require.Regexp(t, `^bidguard \S+ revision \S+ go\S+ config [0-9a-f]{12}\n$`, out)
	for _, flag := range []string{"--version", "-version"} {
		code, out, _ = runCmd(flag)
		require.Equal(t, 0, code)
		require.Equal(t, "bidguard "+version+" revision "+revision+" "+runtime.Version()+"\n", out)
	}
	code, _, errOut := runCmd("--version", "x")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--version takes no arguments")
}

// TestVersionStamped: the version and revision make build and the
// Dockerfile stamp with -ldflags -X reach `version`, `--version` and the
// build-info metric's labels.
func TestVersionStamped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "bidguard")
	build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.version=v9.8.7-3-gabcdef0-dirty -X main.revision=0123456789abcdef0123456789abcdef01234567", ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	out, err = exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	require.Equal(t, "bidguard v9.8.7-3-gabcdef0-dirty revision 0123456789abcdef0123456789abcdef01234567 "+runtime.Version()+"\n", string(out))
	out, err = exec.Command(bin, "version").Output()
	require.NoError(t, err)
	require.Regexp(t, `^bidguard v9\.8\.7-3-gabcdef0-dirty revision 0123456789abcdef0123456789abcdef01234567 go\S+ config [0-9a-f]{12}\n$`, string(out))

	// serve: the start-up log line and bidguard_build_info.
	p := testserve.Start(t, testserve.Options{Bin: bin, Args: []string{"--config", loopbackConfig(t)}})
	logs, admin := p.Log, p.Admin
	require.Regexp(t, `msg=serving version=v9\.8\.7-3-gabcdef0-dirty revision=0123456789abcdef0123456789abcdef01234567 `, logs.String())
	resp, err := http.Get("http://" + admin + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(body), `bidguard_build_info{version="v9.8.7-3-gabcdef0-dirty",revision="0123456789abcdef0123456789abcdef01234567",goversion="`+runtime.Version()+`"} 1`+"\n")
}

// TestHelp: help and -h on every command and subcommand print its usage
// and flags on stdout, exit 0; a usage error is one line on stderr, exit 2.
func TestHelp(t *testing.T) {
	for cmd, flag := range map[string]string{"serve": "-listen", "check": "-config", "audit verify": "-key-file", "version": "-config", "config validate": "-config"} {
		for _, h := range []string{"-h", "--help", "help"} {
			code, out, errOut := runCmd(append(strings.Fields(cmd), h)...)
			require.Equal(t, 0, code, cmd)
			require.Empty(t, errOut, cmd)
			require.Contains(t, out, "usage:\n  bidguard "+cmd+" ", cmd)
			require.Contains(t, out, "\nflags:\n", cmd)
			require.Contains(t, out, "  "+flag+" ", cmd)
		}
		code, out, errOut := runCmd(append(strings.Fields(cmd), "--bogus")...)
		require.Equal(t, 2, code, cmd)
		require.Empty(t, out)
		require.Equal(t, cmd+": flag provided but not defined: -bogus (bidguard "+cmd+" -h: usage)\n", errOut)
	}
	for args, want := range map[string]string{"config -h": "config validate", "config help": "config validate",
		"audit --help": "audit verify", "help config": "config validate"} {
		code, out, errOut := runCmd(strings.Fields(args)...)
		require.Equal(t, 0, code, args)
		require.Empty(t, errOut, args)
		require.Contains(t, out, "usage:\n  bidguard "+want+" ", args)
	}
	for _, args := range [][]string{{"-h"}, {"help"}, {"--help"}} {
		code, out, _ := runCmd(args...)
		require.Equal(t, 0, code)
		for _, c := range []string{"serve", "check", "config validate", "audit verify", "version"} {
			require.Contains(t, out, "  bidguard "+c+" ")
		}
	}
	code, out, _ := runCmd("help", "serve")
	require.Equal(t, 0, code)
	require.Contains(t, out, "-log-format")
	for _, args := range [][]string{{}, {"config"}, {"config", "nope"}, {"audit"}, {"nope"}} {
		code, out, errOut := runCmd(args...)
		require.Equal(t, 2, code, args)
		require.Empty(t, out, args)
		require.Contains(t, errOut, "usage:", args)
	}
}
