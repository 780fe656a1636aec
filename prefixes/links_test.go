package prefixes_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/datatest"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
)

// TestInitAndSkillSeeWhatAKernelSees: prefix init and condition A's skill
// document read and name only what a kernel sees as data/: a link inside
// the folder, never a link to a private file outside it (unless
// FollowLinks), never a named pipe (not even opened: datatest.Pipe fails
// the test if it is), a device or a socket.
func TestInitAndSkillSeeWhatAKernelSees(t *testing.T) {
	for _, lang := range []kernel.Language{kernel.Python, kernel.Go} {
		t.Run(string(lang), func(t *testing.T) {
			dir, _ := datatest.Folder(t)
			res, err := prefixes.InitWith(dir, prefixes.InitOptions{Lang: lang, Style: prefixes.StyleRecords})
			require.NoError(t, err)
			src := string(res.Source)
			assert.Contains(t, src, "sales.csv")
			assert.Contains(t, src, "alias.csv", "a link inside the folder is fine")
			for _, name := range []string{"creds", "pipe", "null", "sock"} {
				assert.NotContains(t, src, name, "what no kernel sees is neither read nor named")
			}
			for _, s := range res.Skipped {
				assert.Contains(t, []string{"sales.csv", "alias.csv"}, s.File, "skipped %s: %s", s.File, s.Reason)
			}

			res, err = prefixes.InitWith(dir, prefixes.InitOptions{Lang: lang, Style: prefixes.StyleRecords, FollowLinks: true})
			require.NoError(t, err)
			assert.Contains(t, string(res.Source), "creds.csv", "FollowLinks takes the link out of the folder")
			assert.NotContains(t, string(res.Source), "pipe")
		})
	}
	t.Run("skill document", func(t *testing.T) {
		dir, _ := datatest.Folder(t)
		doc, err := prefixes.SkillDocument(dir, false)
		require.NoError(t, err)
		assert.Contains(t, doc, "## data/sales.csv")
		assert.Contains(t, doc, "## data/alias.csv")
		assert.NotContains(t, doc, datatest.SecretToken)
		assert.NotContains(t, doc, "creds")
		assert.NotContains(t, doc, "pipe")

		doc, err = prefixes.SkillDocument(dir, true)
		require.NoError(t, err)
		assert.Contains(t, doc, "## data/creds.csv")
		assert.Contains(t, doc, datatest.SecretToken, "with FollowLinks the user chose to show it")
	})
	t.Run("data hash", func(t *testing.T) {
		dir, _ := datatest.Folder(t)
		plain, err := prefixes.DataHash(dir, false)
		require.NoError(t, err)
		followed, err := prefixes.DataHash(dir, true)
		require.NoError(t, err)
		assert.NotEqual(t, plain, followed, "a cached transcript is not shared between the two views of a folder")
	})
}
