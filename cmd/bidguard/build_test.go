package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestImageBuildsWhatMakeBuilds: the Dockerfile and make build (which CI
// runs) build the same static binary with the same flags, both stamping
// version and revision; the image listens on every interface by default.
func TestImageBuildsWhatMakeBuilds(t *testing.T) {
	read := func(path string) string {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		return string(b)
	}
	docker, makefile := read("../../Dockerfile"), read("../../Makefile")
	goBuild := regexp.MustCompile(`CGO_ENABLED=0 (?:\$\(GO\)|go) build -trimpath[^\n]*?(?:\\\n[^\n]*)*?\./cmd/bidguard`)
	d, m := goBuild.FindString(docker), goBuild.FindString(makefile)
	require.NotEmpty(t, d, "the Dockerfile's go build")
	require.NotEmpty(t, m, "make build's go build")
	flags := regexp.MustCompile(`LDFLAGS := (.*)`).FindStringSubmatch(makefile)
	require.NotNil(t, flags)
	require.Equal(t, "-s -w -X main.version=$(VERSION) -X main.revision=$(REVISION)", flags[1])
	require.Contains(t, m, `-ldflags "$(LDFLAGS)"`)
	require.Contains(t, d, `-ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}"`)
	require.Contains(t, makefile, "VERSION ?= $(shell git describe --tags --always --dirty")
	require.Contains(t, makefile, "REVISION ?= $(shell git rev-parse HEAD")
	require.Contains(t, docker, "ARG VERSION=")
	require.Contains(t, docker, "ARG REVISION=")
	require.Contains(t, docker, `CMD ["serve", "--listen", ":8080", "--admin", ":9090"]`)

	ignore := strings.Fields(read("../../.dockerignore"))
	require.Contains(t, ignore, ".git")
	require.Contains(t, ignore, "bin")
}
