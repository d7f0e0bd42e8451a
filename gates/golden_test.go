package gates

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

// goldenCase is one file of gates/testdata/<factory>/*.json: a request and a
// response judged by a policy, and the verdict the spec demands.
type goldenCase struct {
	Description string `json:"description"`
	// Config is a whole YAML config. Without it the policy holds only the
	// gate under test, with Options.
	Config    string          `json:"config"`
	Options   json.RawMessage `json:"options"`
	ElapsedMs int64           `json:"elapsed_ms"`
	LatencyMs *int64          `json:"latency_ms"`
	All       bool            `json:"all"`
	Request   json.RawMessage `json:"request"`
	Response  json.RawMessage `json:"response"`
	Expect    struct {
		Passed *bool  `json:"passed"`
		Action string `json:"action"`
		// GateName names the result to compare (default: the factory's result name).
		GateName string `json:"gate_name"`
		Gate     *struct {
			Passed  *bool   `json:"passed"`
			Skipped *bool   `json:"skipped"`
			Reason  *string `json:"reason"`
			Details any     `json:"details"`
		} `json:"gate"`
		// Rejected and Warned list every entry, each compared on the keys it gives.
		Rejected []map[string]any `json:"rejected"`
		Warned   []map[string]any `json:"warned"`
		Response any              `json:"response"`
	} `json:"expect"`
}

func loadGolden(t *testing.T, path string) goldenCase {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var c goldenCase
	require.NoError(t, json.Unmarshal(data, &c), path)
	return c
}

func goldenSnapshot(t *testing.T, factory string, c goldenCase) *engine.Snapshot {
	t.Helper()
	cfgText := c.Config
	if cfgText == "" {
		cfgText = "policy:\n  gates:\n    - gate: " + factory + "\n"
		if len(c.Options) > 0 {
			cfgText += "      options: " + string(c.Options) + "\n"
		}
	}
	dir := filepath.Join("testdata", factory)
	cfg, err := config.Parse(filepath.Join(dir, "bidguard.yaml"), []byte(cfgText))
	require.NoError(t, err)
	snap, err := engine.Compile(cfg, filepath.Join(dir, "bidguard.yaml"), []byte(cfgText), Builtin())
	require.NoError(t, err)
	return snap
}

// TestGolden runs every golden pair through the engine as `check` does.
func TestGolden(t *testing.T) {
	reg := Builtin()
	for name, f := range reg {
		files, _ := filepath.Glob(filepath.Join("testdata", name, "*.json"))
		for _, path := range files {
			t.Run(name+"/"+strings.TrimSuffix(filepath.Base(path), ".json"), func(t *testing.T) {
				c := loadGolden(t, path)
				snap := goldenSnapshot(t, name, c)
				lat := int64(-1)
				if c.LatencyMs != nil {
					lat = *c.LatencyMs
				}
				rep, ev, err := engine.Check(snap, c.Request, c.Response, engine.CheckOptions{ElapsedMs: c.ElapsedMs, LatencyMs: lat, All: c.All})
				require.NoError(t, err)
				defer engine.ReleaseEval(ev)
				got, _ := json.MarshalIndent(rep, "", "  ")
				msg := fmt.Sprintf("%s: %s\ngot: %s", path, c.Description, got)
				x := c.Expect
				if x.Passed != nil {
					require.Equal(t, *x.Passed, rep.Passed, msg)
				}
				if x.Action != "" {
					require.Equal(t, x.Action, rep.Action, msg)
				}
				if x.Gate != nil {
					gn := x.GateName
					if gn == "" {
						gn = f.ResultName
					}
					var gr *engine.GateResult
					for i := range rep.Gates {
						if rep.Gates[i].Name == gn && rep.Gates[i].Policy == "default" {
							gr = &rep.Gates[i]
						}
					}
					require.NotNil(t, gr, msg)
					if x.Gate.Passed != nil {
						require.Equal(t, *x.Gate.Passed, gr.Passed, msg)
					}
					if x.Gate.Skipped != nil {
						require.Equal(t, *x.Gate.Skipped, gr.Skipped, msg)
					}
					if x.Gate.Reason != nil {
						require.Equal(t, *x.Gate.Reason, gr.Reason, msg)
					}
					if x.Gate.Details != nil {
						want, _ := json.Marshal(x.Gate.Details)
						have, _ := json.Marshal(gr.Details)
						require.JSONEq(t, string(want), string(have), msg)
					}
				}
				if x.Rejected != nil {
					compareHits(t, x.Rejected, rep.Rejected, msg)
				}
				if x.Warned != nil {
					compareHits(t, x.Warned, rep.Warned, msg)
				}
				if x.Response != nil {
					want, _ := json.Marshal(x.Response)
					require.JSONEq(t, string(want), string(rep.Response), msg)
				}
			})
		}
	}
}

func compareHits(t *testing.T, want []map[string]any, got []engine.Hit, msg string) {
	t.Helper()
	require.Len(t, got, len(want), msg)
	for i, w := range want {
		raw, _ := json.Marshal(got[i])
		var g map[string]any
		require.NoError(t, json.Unmarshal(raw, &g))
		for k, v := range w {
			require.Equal(t, v, g[k], "%s\nentry %d key %q", msg, i, k)
		}
	}
}

// coverageProblems lists what a registered gate lacks: one README row (not
// two), a test file, and golden pairs with at least one passing and one
// failing verdict.
func coverageProblems(reg engine.Registry, dir string) []string {
	readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	var out []string
	names := make([]string, 0, len(reg))
	for n := range reg {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		switch strings.Count(string(readme), "\n| `"+n+"`") {
		case 0:
			out = append(out, n+": no row in README.md")
		case 1:
		default:
			out = append(out, n+": more than one row in README.md")
		}
		if _, err := os.Stat(filepath.Join(dir, strings.ToLower(n)+"_test.go")); err != nil {
			out = append(out, n+": no test file "+strings.ToLower(n)+"_test.go")
		}
		files, _ := filepath.Glob(filepath.Join(dir, "testdata", n, "*.json"))
		pass, fail := false, false
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var c struct {
				Expect struct {
					Passed *bool `json:"passed"`
				} `json:"expect"`
			}
			if json.Unmarshal(data, &c) != nil || c.Expect.Passed == nil {
				continue
			}
			pass = pass || *c.Expect.Passed
			fail = fail || !*c.Expect.Passed
		}
		if !pass || !fail {
			out = append(out, n+": testdata needs a passing and a failing pair")
		}
	}
	return out
}

func TestEveryGateIsDocumentedTestedAndHasGoldenPairs(t *testing.T) {
	require.Empty(t, coverageProblems(Builtin(), "."))
}

func TestCoverageCheckCanFail(t *testing.T) {
	dir := t.TempDir()
	reg := engine.Registry{"madeUp": {Name: "madeUp", ResultName: "made-up"}}
	require.ElementsMatch(t, []string{
		"madeUp: no row in README.md",
		"madeUp: no test file madeup_test.go",
		"madeUp: testdata needs a passing and a failing pair",
	}, coverageProblems(reg, dir))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("\n| `madeUp` | x |\n| `madeUp` | y |\n"), 0o644))
	require.Contains(t, coverageProblems(reg, dir), "madeUp: more than one row in README.md")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("\n| `madeUp` | x |\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "madeup_test.go"), nil, 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "testdata", "madeUp"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "testdata", "madeUp", "a.json"), []byte(`{"expect":{"passed":true}}`), 0o644))
	require.Equal(t, []string{"madeUp: testdata needs a passing and a failing pair"}, coverageProblems(reg, dir))
}
