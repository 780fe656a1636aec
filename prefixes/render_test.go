package prefixes_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// golden compares got with the golden file name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("..", "testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run go test ./prefixes -run %s -update", t.Name())
	assert.Equal(t, string(want), string(got), "golden %s differs (-want +got); if the change is intended, run go test ./prefixes -run %s -update", path, t.Name())
}

// TestRenderGolden renders the built pm prefix (and pm-nobind for B0) of the
// s tier, seed 1, in every protocol, for the first built-in task.
func TestRenderGolden(t *testing.T) {
	dir := t.TempDir()
	tier, err := datasets.ParseTier("s")
	require.NoError(t, err)
	d := datasets.Generate(tier, 1)
	_, err = d.Write(dir, true)
	require.NoError(t, err)
	tasks, err := datasets.Tasks(d)
	require.NoError(t, err)
	question := tasks[0].Question
	skill, err := prefixes.SkillDocument(dir, false)
	require.NoError(t, err)

	for _, tc := range []struct {
		prefix   string
		protocol session.Protocol
	}{
		{"pm", session.Bare},
		{"pm", session.Eval},
		{"pm-nobind", session.Eval},
		{"pm", session.TranscriptText},
		{"pm", session.CLI},
	} {
		t.Run(tc.prefix+"-"+string(tc.protocol), func(t *testing.T) {
			p, err := prefixes.Load(tc.prefix)
			require.NoError(t, err)
			in := session.Input{Question: question, Skill: skill}
			if tc.protocol != session.CLI {
				cells, err := prefixes.Build(context.Background(), kerneltest.Python(t, dir), p, kernel.ExecOptions{Timeout: time.Minute})
				require.NoError(t, err)
				in = p.Input(cells, question)
			}
			req, err := session.Render(tc.protocol, in)
			require.NoError(t, err)
			golden(t, filepath.Join("render", tc.prefix+"-"+string(tc.protocol)+".json"), req.JSON())
		})
	}
}

// BenchmarkRenderCountPM renders the built pm prefix of the xl tier in each
// protocol and counts the request's tokens (target: under 5 ms); the
// "tokens" metric is the size of the rendered request for one question.
func BenchmarkRenderCountPM(b *testing.B) {
	dir := b.TempDir()
	tier, err := datasets.ParseTier("xl")
	require.NoError(b, err)
	d := datasets.Generate(tier, 1)
	_, err = d.Write(dir, true)
	require.NoError(b, err)
	k := kerneltest.Python(b, dir)
	p, err := prefixes.Load("pm")
	require.NoError(b, err)
	cells, err := prefixes.Build(context.Background(), k, p, kernel.ExecOptions{Timeout: time.Minute})
	require.NoError(b, err)
	skill, err := prefixes.SkillDocument(dir, false)
	require.NoError(b, err)
	tasks, err := datasets.Tasks(d)
	require.NoError(b, err)
	question := tasks[0].Question
	for _, protocol := range session.Protocols() {
		b.Run(string(protocol), func(b *testing.B) {
			in := p.Input(cells, question)
			if protocol == session.CLI {
				in = session.Input{Skill: skill, Question: question}
			}
			var tokens int
			for b.Loop() {
				req, err := session.Render(protocol, in)
				if err != nil {
					b.Fatal(err)
				}
				if tokens, err = session.CountRequest(session.O200kBase, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(tokens), "tokens")
		})
	}
}
