package prefixes_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
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

// TestFirstRequestRules renders each condition's first request over the
// built-in data (s tier, seed 1), as `ctxcode prefix show` does, and checks
// the rules a model reads: every condition says how ANSWER works in the
// same words (it may be called in the cell that computes the value, it ends
// the run, what to pass), the harness's notes are introduced once where
// the model reads outputs, one shot (C) mentions no output cut it never
// sees, B0's rules do not contradict its eval tool ("Variables persist
// between calls"), the data listing shows no manifest.json, and no request
// is longer than it was before these rules (the counts of main, measured
// with `ctxcode prefix show P --data DIR --protocol all`).
func TestFirstRequestRules(t *testing.T) {
	dir := t.TempDir()
	tier, err := datasets.ParseTier("s")
	require.NoError(t, err)
	_, err = datasets.Generate(tier, 1).Write(dir, true)
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(dir, datasets.ManifestFile), "the data folder has a manifest to hide")
	skill, err := prefixes.SkillDocument(dir, false)
	require.NoError(t, err)
	const question = "<the question goes here>"

	type condition struct {
		name, prefix string
		protocol     session.Protocol
		before       int // tokens of the request on main, before these rules
	}
	conditions := []condition{
		{"A", "", session.CLI, 693},
		{"B", "pm", session.Eval, 759},
		{"B0", "pm-nobind", session.Eval, 787},
		{"D", "pm", session.Bare, 665},
		{"C", "pm", session.TranscriptText, 653},
	}
	const (
		kinds = "a number, string, list, or dict for several named parts"
		notes = "[ctxcode: …] lines are harness notes."
		cell  = "ANSWER(value) in code answers and ends the run, also in the cell that computes value: " + kinds + ", from code that ran."
	)
	for _, c := range conditions {
		t.Run(c.name, func(t *testing.T) {
			in := session.Input{Skill: skill, Question: question}
			if c.prefix != "" {
				p, err := prefixes.Load(c.prefix)
				require.NoError(t, err)
				cells, err := prefixes.Build(context.Background(), kerneltest.Python(t, dir), p, kernel.ExecOptions{Timeout: time.Minute})
				require.NoError(t, err)
				in = p.Input(cells, question)
			}
			req, err := session.Render(c.protocol, in)
			require.NoError(t, err)
			rules := req.Messages[0].Content
			if c.protocol == session.TranscriptText {
				rules, _, _ = strings.Cut(rules, "\n\nIn [1]:") // the rules before the transcript
			}
			whole := req.Text()

			assert.Contains(t, rules, "ends the run", "the call ends the run")
			assert.Contains(t, rules, kinds, "what to pass, in the same words everywhere")
			if c.protocol == session.CLI {
				assert.Contains(t, rules, `"ANSWER: <value>"`)
			} else {
				assert.Contains(t, rules, cell, "the same ANSWER rule in B, B0, C and D")
			}
			if c.protocol == session.TranscriptText {
				assert.NotContains(t, rules, "[ctxcode", "one shot reads no output of its own: no notes to introduce")
				assert.NotContains(t, strings.ToLower(whole), "cut", "one shot never sees an output cut")
			} else {
				assert.Equal(t, 1, strings.Count(whole, notes), "the harness's notes are introduced once")
			}
			assert.NotContains(t, whole, "manifest.json", "the listing shows the data, not ctxcode's manifest")
			if c.name == "B0" {
				assert.NotContains(t, rules, "Nothing is loaded")
				assert.NotContains(t, rules, "each cell you write", "the eval tool says variables persist: the rules must not say otherwise")
				assert.Contains(t, req.Tools[0].Description, "Variables persist between calls")
			}
			n, err := session.CountRequest(session.O200kBase, req)
			require.NoError(t, err)
			assert.LessOrEqual(t, n, c.before, "the first request is no longer than before")
		})
	}
}
