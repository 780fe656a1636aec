package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// TestRuntimeIdentity: the identity names the image by its id, or the
// interpreter by its resolved path, size and time, with the options that
// change what a kernel prints; it is empty when it cannot tell.
func TestRuntimeIdentity(t *testing.T) {
	// A fake interpreter behind a link: the identity names the file, not
	// the link, and changes when the file does.
	dir := t.TempDir()
	python := filepath.Join(dir, "python3.99")
	require.NoError(t, os.WriteFile(python, []byte("#!/bin/sh\n"), 0o755))
	link := filepath.Join(dir, "python3")
	require.NoError(t, os.Symlink(python, link))
	local := OpenOptions{Kind: KindLocal, Python: link}

	for name, tc := range map[string]struct {
		opts    OpenOptions
		imageID string
		want    string // a prefix of the identity; "" for none
	}{
		"docker":                    {OpenOptions{}, "sha256:abc", "docker sha256:abc python"},
		"docker, go, no ipython":    {OpenOptions{Lang: kernel.Go, NoIPython: true}, "sha256:abc", "docker sha256:abc go no-ipython"},
		"docker without an id":      {OpenOptions{}, "", ""},
		"docker falls back to host": {OpenOptions{HostFallback: true, Python: link}, "", "local " + python + " 10 "},
		"local":                     {local, "sha256:ignored", "local " + python + " 10 "},
		"local go, data link":       {OpenOptions{Kind: KindLocal, Lang: kernel.Go, Local: kernel.LocalConfig{LinkData: true}}, "", "local go data-link"},
		"no interpreter":            {OpenOptions{Kind: KindLocal, Python: filepath.Join(dir, "missing")}, "", ""},
	} {
		t.Run(name, func(t *testing.T) {
			got := tc.opts.RuntimeIdentity(tc.imageID)
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.True(t, strings.HasPrefix(got, tc.want), "%q does not start with %q", got, tc.want)
		})
	}

	withFlags := local
	withFlags.NoIPython, withFlags.Local.LinkData = true, true
	assert.True(t, strings.HasSuffix(withFlags.RuntimeIdentity(""), " no-ipython data-link"), withFlags.RuntimeIdentity(""))

	before := local.RuntimeIdentity("")
	require.NoError(t, os.WriteFile(python, []byte("#!/bin/sh\n# another\n"), 0o755))
	assert.NotEqual(t, before, local.RuntimeIdentity(""), "another interpreter behind the same path")
}
