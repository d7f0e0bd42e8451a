package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readmeDemoCurl is the command the README shows, with the address serve
// --demo listens on by default.
const readmeDemoCurl = "$ curl -s -i -H 'Content-Type: application/json' -d @configs/demo/request.json 127.0.0.1:8080/"

// TestReadmeDemoOutput: the README's sample output of the quick start (the
// demo's answer to configs/demo/request.json, and the rejection log lines
// it logs) is what `serve --demo` with the embedded config prints on the
// first request. Date and Content-Length are left out of the headers, the
// time of the log lines too. UPDATE_README=1 rewrites the README's blocks
// between the demo-answer and demo-log markers.
func TestReadmeDemoOutput(t *testing.T) {
	s, stop := serveInProcess(t, serveFlags{demo: true, listen: "127.0.0.1:0", admin: "127.0.0.1:0"})
	addr, errOut := s.addr, s.stderr
	req, err := os.ReadFile("../../configs/demo/request.json")
	require.NoError(t, err)
	resp, err := http.Post("http://"+addr+"/", "application/json", bytes.NewReader(req))
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	var answer strings.Builder
	fmt.Fprintf(&answer, "%s\n%s %s\n", readmeDemoCurl, resp.Proto, resp.Status)
	for _, h := range []string{"Content-Type", "X-Bidguard-Config", "X-Bidguard-Rejected"} {
		fmt.Fprintf(&answer, "%s: %s\n", h, resp.Header.Get(h))
	}
	fmt.Fprintf(&answer, "\n%s\n", body)

	var logLines []string
	require.Eventually(t, func() bool {
		logLines = logLines[:0]
		for _, l := range strings.Split(errOut.String(), "\n") {
			if strings.Contains(l, `msg="bid rejected"`) {
				logLines = append(logLines, regexp.MustCompile(`^time=\S+ `).ReplaceAllString(l, ""))
			}
		}
		return len(logLines) == 2
	}, 5*time.Second, 5*time.Millisecond, "two rejection log lines: %s", errOut.String())
	require.Equal(t, 0, stop())

	want := map[string]string{
		"demo-answer": "```sh\n" + answer.String() + "```\n",
		"demo-log":    "```\n" + strings.Join(logLines, "\n") + "\n```\n",
	}
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	updated := string(readme)
	for name, block := range want {
		re := regexp.MustCompile("(?s)(<!-- " + name + " begin[^>]*-->\n)(.*?)(<!-- " + name + " end -->)")
		m := re.FindStringSubmatch(updated)
		require.NotNil(t, m, "README.md: no %s markers", name)
		if os.Getenv("UPDATE_README") == "1" {
			updated = re.ReplaceAllLiteralString(updated, m[1]+block+m[3])
			continue
		}
		require.Equal(t, block, m[2], "README.md's %s block differs from what the demo prints (UPDATE_README=1 go test -run TestReadmeDemoOutput ./cmd/bidguard/ rewrites it)", name)
	}
	if updated != string(readme) {
		require.NoError(t, os.WriteFile("../../README.md", []byte(updated), 0o644))
		t.Log("README.md updated")
	}
}
