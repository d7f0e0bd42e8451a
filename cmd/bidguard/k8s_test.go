package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/bidguard/bidguard/config"
)

// at walks a decoded YAML document by map keys and list indexes.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "%v: not a mapping at %q", path, k)
			v, ok = m[k]
			require.True(t, ok, "%v: no key %q", path, k)
		case int:
			l, ok := v.([]any)
			require.True(t, ok && k < len(l), "%v: no item %d", path, k)
			v = l[k]
		}
	}
	return v
}

// TestKubernetesExample: configs/k8s/sidecar.yaml holds a valid bidguard
// config in a ConfigMap, a Service on the exchange port, and a Deployment
// whose bidguard container runs restricted (non-root, read-only root
// filesystem, no capabilities, seccomp RuntimeDefault) with probes and
// resources, and whose grace period outlasts the drain, the longest
// request and the closing of idle connections.
func TestKubernetesExample(t *testing.T) {
	data, err := os.ReadFile("../../configs/k8s/sidecar.yaml")
	require.NoError(t, err)
	docs := map[string]any{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var d map[string]any
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		docs[d["kind"].(string)] = d
	}
	require.Contains(t, docs, "ConfigMap")
	require.Contains(t, docs, "Service")
	require.Contains(t, docs, "Deployment")

	file := at(t, docs["ConfigMap"], "data", "bidguard.yaml").(string)
	cfg, err := config.Parse("sidecar.yaml", []byte(file))
	require.NoError(t, err)
	require.NotEmpty(t, cfg.Upstreams)
	require.Positive(t, cfg.Shutdown.DrainMs, "the example drains")

	pod := at(t, docs["Deployment"], "spec", "template", "spec")
	grace := at(t, pod, "terminationGracePeriodSeconds").(int)
	const closeIdle = 1000 // rtb.DefaultDrain: idle connections closed after it
	require.Greater(t, grace*1000, cfg.Shutdown.DrainMs+cfg.Deadline.MaxTmaxMs+closeIdle,
		"terminationGracePeriodSeconds must exceed drainMs + maxTmaxMs + 1 s")
	require.Equal(t, "RuntimeDefault", at(t, pod, "securityContext", "seccompProfile", "type"))
	require.Equal(t, true, at(t, pod, "securityContext", "runAsNonRoot"))

	var sidecar any
	for _, c := range at(t, pod, "containers").([]any) {
		if at(t, c, "name") == "bidguard" {
			sidecar = c
		}
	}
	require.NotNil(t, sidecar, "a container named bidguard")
	sc := at(t, sidecar, "securityContext")
	require.Equal(t, true, at(t, sc, "runAsNonRoot"))
	require.Equal(t, true, at(t, sc, "readOnlyRootFilesystem"))
	require.Equal(t, false, at(t, sc, "allowPrivilegeEscalation"))
	require.Equal(t, []any{"ALL"}, at(t, sc, "capabilities", "drop"))
	require.Equal(t, "RuntimeDefault", at(t, sc, "seccompProfile", "type"))
	require.Equal(t, "/readyz", at(t, sidecar, "readinessProbe", "httpGet", "path"))
	require.Equal(t, "/healthz", at(t, sidecar, "livenessProbe", "httpGet", "path"))
	live := at(t, sidecar, "livenessProbe")
	require.Greater(t, at(t, live, "periodSeconds").(int)*at(t, live, "failureThreshold").(int)*1000, cfg.Shutdown.DrainMs,
		"/healthz answers 503 while draining: liveness must not fail within the drain")
	require.NotNil(t, at(t, sidecar, "resources", "requests", "cpu"))
	require.NotNil(t, at(t, sidecar, "resources", "limits", "memory"))

	svc := at(t, docs["Service"], "spec", "ports", 0)
	require.Equal(t, "rtb", at(t, svc, "targetPort"))
	require.Equal(t, at(t, docs["Deployment"], "spec", "selector", "matchLabels"), at(t, docs["Service"], "spec", "selector"))
}
