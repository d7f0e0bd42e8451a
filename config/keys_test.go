package config_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/bidguard/bidguard/config"
	"github.com/bidguard/bidguard/configs"
)

// keyPaths lists the key paths of a config type by its yaml tags:
// "limits.maxConns", "upstreams[].deadline.minBidderMs". Maps, types with
// their own UnmarshalYAML and yaml.Node fields are leaves.
func keyPaths(t reflect.Type, prefix string) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		path := prefix + tag
		out = append(out, path)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct && !leaf(ft.Elem()) {
			out = append(out, keyPaths(ft.Elem(), path+"[].")...)
		} else if ft.Kind() == reflect.Struct && !leaf(ft) {
			out = append(out, keyPaths(ft, path+".")...)
		}
	}
	return out
}

func leaf(t reflect.Type) bool {
	return t == reflect.TypeFor[yaml.Node]() || reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]())
}

// has reports whether the decoded YAML document v holds the key path
// (a list element path "[]" is looked up in every element).
func has(v any, path []string) bool {
	if len(path) == 0 {
		return true
	}
	k, list := strings.CutSuffix(path[0], "[]")
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	child, ok := m[k]
	if !ok {
		return false
	}
	if !list {
		return has(child, path[1:])
	}
	items, _ := child.([]any)
	for _, it := range items {
		if has(it, path[1:]) {
			return true
		}
	}
	return len(path) == 1
}

// TestEveryKeyIsShown: every key of the config struct appears with its
// default in the embedded config or in the shape of docs/design.md's
// "Configuration" section, so an operator finds each key in one of them.
func TestEveryKeyIsShown(t *testing.T) {
	var embedded, shape any
	require.NoError(t, yaml.Unmarshal(configs.Default, &embedded))
	doc, err := os.ReadFile("../docs/design.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)\n## Configuration\n.*?```yaml\n(.*?)```").FindSubmatch(doc)
	require.NotNil(t, m, "docs/design.md: the Configuration section's yaml block")
	require.NoError(t, yaml.Unmarshal(m[1], &shape))
	paths := keyPaths(reflect.TypeFor[config.Config](), "")
	require.Contains(t, paths, "upstreams[].deadline.minBidderMs")
	require.Contains(t, paths, "shutdown.drainMs")
	for _, p := range paths {
		parts := strings.Split(p, ".")
		if k, ok := strings.CutPrefix(p, "upstreams[].deadline."); ok {
			parts = []string{"deadline", k} // an upstream's override has the deadline block's keys
		}
		require.True(t, has(embedded, parts) || has(shape, parts),
			"%s: in neither configs/bidguard.yaml nor docs/design.md#configuration", p)
	}
	// The embedded config gives every key but an upstream's (it has none).
	for _, p := range paths {
		if !strings.HasPrefix(p, "upstreams[].") {
			require.True(t, has(embedded, strings.Split(p, ".")), "configs/bidguard.yaml lacks %s", p)
		}
	}
}

// TestEmbeddedShowsDefaults: the values the embedded config shows are the
// defaults (serve without --config runs it, so a value that differed
// would silently become the default of that run).
func TestEmbeddedShowsDefaults(t *testing.T) {
	cfg, err := config.Parse(configs.DefaultName, configs.Default)
	require.NoError(t, err)
	got := *cfg
	// What the file spells as an empty list or map, or as an explicit
	// default of a pointer, the defaults leave nil.
	if len(got.Upstreams) == 0 {
		got.Upstreams = nil
	}
	if len(got.Seats) == 0 {
		got.Seats = nil
	}
	if len(got.Quarantine.Seats) == 0 {
		got.Quarantine.Seats = nil
	}
	if len(got.Policy.CurrencyRates) == 0 {
		got.Policy.CurrencyRates = nil
	}
	if f := got.Policy.FailFast; f != nil && *f {
		got.Policy.FailFast = nil
	}
	if r := got.Log.RejectionsPerSecond; r != nil && *r == config.DefaultRejectionsPerSecond {
		got.Log.RejectionsPerSecond = nil
	}
	got.Policy.Gates = nil // the default policy: what the file is for
	require.Equal(t, config.DefaultConfig(), got)
}
