package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/gatetest"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/llm/llmtest"
	"github.com/ctxcode/ctxcode/session"
)

// reachablePython is an interpreter that a script run by a local kernel's
// user may start: the kernel shows its own interpreter to user nobody
// (when the tests run as root), but not one a wrapper starts.
func reachablePython(t *testing.T) string {
	t.Helper()
	python, err := kernel.FindPython(os.Getenv("CTXCODE_PYTHON"))
	require.NoError(t, err)
	if os.Geteuid() != 0 {
		return python
	}
	for _, p := range []string{python, "/usr/bin/python3"} {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		open := true
		for d := filepath.Dir(real); open && d != "/"; d = filepath.Dir(d) {
			st, err := os.Stat(d)
			open = err == nil && st.Mode().Perm()&0o001 != 0
		}
		if open {
			return real
		}
	}
	skipOrFail(t, "no Python interpreter that user nobody can reach (tests as root run local kernels as nobody)")
	return ""
}

// askJSON runs ask with --json over a scripted model and returns its record.
func askJSON(t *testing.T, srv *llmtest.Server, args ...string) (map[string]any, outcome) {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "sk-x")
	args = append([]string{"ask", "--json", "--model", "m", "--base-url", srv.URL, "--sandbox", "local"}, args...)
	got := runCLI(t, "", args...)
	require.Equal(t, exitOK, got.code, got.stderr)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(got.stdout), &rec), got.stdout)
	return rec, got
}

func cacheEntries(t *testing.T, cache string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(cache, "ctxcode", "transcripts"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, filepath.Join(cache, "ctxcode", "transcripts", e.Name()))
	}
	return names
}

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	return path
}

// TestAskKeepsThePrefixAndStartsFromIt: the first ask builds the prefix
// and keeps it (a miss); the second sends its first request before its
// own build has finished (a hit). The proof is the order: a prefix cell
// reads a FIFO that is written only when the server has received that
// request. --no-cache builds first and keeps nothing.
func TestAskKeepsThePrefixAndStartsFromIt(t *testing.T) {
	requirePython(t)
	cache := privateCache(t)
	data := t.TempDir()
	writeFile(t, filepath.Join(data, "n.txt"), "3\n")
	gate := writeFile(t, filepath.Join(gatetest.SharedDir(t), "gate"), "open\n")
	prefix := writeFile(t, filepath.Join(t.TempDir(), "gated.py"),
		"# %%\ngate = open("+strconv.Quote(gate)+").read().strip()\ngate\n# %%\nn = int(open('data/n.txt').read())\nn\n")
	args := []string{"--prefix", prefix, "--data", data, "What is n plus one?"}

	srv := llmtest.NewServer(t, llmtest.Text("ANSWER(n + 1)", 300, 5))
	rec, _ := askJSON(t, srv, args...)
	assert.EqualValues(t, 4, rec["answer"])
	assert.Equal(t, "miss", rec["prefix_cache"])
	entries := cacheEntries(t, cache)
	require.Len(t, entries, 1, "the built prefix is kept")
	kept, err := os.ReadFile(entries[0])
	require.NoError(t, err)
	assert.Contains(t, string(kept), `"value": "'open'"`)

	release := gatetest.FIFO(t, gate)
	srv = llmtest.NewServer(t, llmtest.Reply{Content: "ANSWER(n + 1)", Usage: &llmtest.Usage{Prompt: 300, Completion: 5}, OnRequest: release})
	rec, _ = askJSON(t, srv, args...)
	assert.EqualValues(t, 4, rec["answer"])
	assert.Equal(t, "hit", rec["prefix_cache"])
	assert.EqualValues(t, 0, rec["discarded_calls"])
	assert.EqualValues(t, 1, rec["turns"])

	// --no-cache: the build comes first (the gate is a plain file again),
	// and the entry is left as it was.
	require.NoError(t, os.Remove(gate))
	writeFile(t, gate, "open\n")
	srv = llmtest.NewServer(t, llmtest.Text("ANSWER(n + 1)", 300, 5))
	rec, _ = askJSON(t, srv, append([]string{"--no-cache"}, args...)...)
	assert.Equal(t, "off", rec["prefix_cache"])
	again, err := os.ReadFile(entries[0])
	require.NoError(t, err)
	assert.Equal(t, string(kept), string(again))
}

// TestAskStaleCacheEntryIsDiscarded: a data file rewritten with its size
// and time kept hashes the same, so the next ask starts from the kept
// prefix, whose output is now wrong. The live build differs: the first
// reply (an answer that would end the run) is discarded unread and
// counted, the request is sent again with the real output, and the entry
// is replaced, so the ask after hits.
func TestAskStaleCacheEntryIsDiscarded(t *testing.T) {
	requirePython(t)
	privateCache(t)
	data := t.TempDir()
	notes := writeFile(t, filepath.Join(data, "notes.txt"), "red\n")
	when := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	require.NoError(t, os.Chtimes(notes, when, when))
	prefix := writeFile(t, filepath.Join(t.TempDir(), "notes.py"), "# %%\nprint(open('data/notes.txt').read().strip())\n")
	args := []string{"--prefix", prefix, "--data", data, "What do the notes say?"}

	srv := llmtest.NewServer(t, llmtest.Text("ANSWER('first')", 300, 5))
	rec, _ := askJSON(t, srv, args...)
	assert.Equal(t, "miss", rec["prefix_cache"])

	writeFile(t, notes, "blu\n")
	require.NoError(t, os.Chtimes(notes, when, when))
	srv = llmtest.NewServer(t,
		llmtest.Reply{Content: "ANSWER('stale')", Usage: &llmtest.Usage{Prompt: 300, Completion: 5}},
		llmtest.Reply{Content: "ANSWER(open('data/notes.txt').read().strip())", Usage: &llmtest.Usage{Prompt: 310, Completion: 9}},
	)
	traj := filepath.Join(t.TempDir(), "run.jsonl")
	rec, got := askJSON(t, srv, append([]string{"--trajectory", traj}, args...)...)
	assert.Equal(t, "blu", rec["answer"], "the answer came from the request with the real output")
	assert.Equal(t, "stale", rec["prefix_cache"])
	assert.EqualValues(t, 1, rec["discarded_calls"])
	assert.EqualValues(t, 1, rec["turns"])
	assert.EqualValues(t, 610, rec["context_tokens"], "the discarded call is in the cost")
	assert.EqualValues(t, 14, rec["output_tokens"])
	assert.NotContains(t, got.stderr, "warning: prefix cache")

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	prefixOutput := func(r llmtest.Request) string { return r.Body.Messages[2].Content }
	assert.Equal(t, "red", prefixOutput(reqs[0]), "sent at once over the kept output")
	assert.Equal(t, "blu", prefixOutput(reqs[1]), "sent again over the real one")

	var types []string
	for _, e := range readTrajectory(t, traj).Events {
		types = append(types, e.Kind)
		if e.Cell != nil {
			assert.NotContains(t, e.Cell.Code, "stale", "the discarded reply never ran")
		}
	}
	assert.Equal(t, []string{"run", "prefix", "discarded", "call", "cell", "answer", "end"}, types)

	srv = llmtest.NewServer(t, llmtest.Text("ANSWER('blu')", 300, 5))
	rec, _ = askJSON(t, srv, args...)
	assert.Equal(t, "hit", rec["prefix_cache"], "the entry was replaced")
	assert.Equal(t, "blu", srv.Requests()[0].Body.Messages[2].Content)
}

// TestAskCorruptCacheEntryIsAMiss: an entry that does not read is a
// warning and a miss, never a failure, and is replaced.
func TestAskCorruptCacheEntryIsAMiss(t *testing.T) {
	requirePython(t)
	cache := privateCache(t)
	data := t.TempDir()
	writeFile(t, filepath.Join(data, "n.txt"), "3\n")
	prefix := writeFile(t, filepath.Join(t.TempDir(), "n.py"), "# %%\nn = int(open('data/n.txt').read())\nn\n")
	args := []string{"--prefix", prefix, "--data", data, "What is n?"}

	srv := llmtest.NewServer(t, llmtest.Text("ANSWER(n)", 300, 5), llmtest.Text("ANSWER(n)", 300, 5), llmtest.Text("ANSWER(n)", 300, 5))
	askJSON(t, srv, args...)
	entries := cacheEntries(t, cache)
	require.Len(t, entries, 1)
	writeFile(t, entries[0], `{"format": 1, "cells": [`)

	rec, got := askJSON(t, srv, args...)
	assert.EqualValues(t, 3, rec["answer"])
	assert.Equal(t, "miss", rec["prefix_cache"])
	assert.Contains(t, got.stderr, "ctxcode: warning: prefix cache entry "+entries[0]+": not an entry")

	rec, got = askJSON(t, srv, args...)
	assert.Equal(t, "hit", rec["prefix_cache"], "the entry was replaced")
	assert.NotContains(t, got.stderr, "warning: prefix cache")
}

// TestAskConditionASendsTheFirstRequestWhileTheKernelStarts: condition A
// needs no kernel for its first request, so the request goes out while
// the kernel starts: the interpreter here is a wrapper that waits, before
// it runs Python, until the server has received that request.
func TestAskConditionASendsTheFirstRequestWhileTheKernelStarts(t *testing.T) {
	requirePython(t)
	data := pmData(t)
	python := reachablePython(t)
	shared := gatetest.SharedDir(t)
	gate := filepath.Join(shared, "gate")
	release := gatetest.FIFO(t, gate)
	wrapper := filepath.Join(shared, "python-after-the-request")
	require.NoError(t, os.WriteFile(wrapper, []byte("#!/bin/sh\nread line < "+gate+"\nexec "+python+" \"$@\"\n"), 0o755))

	srv := llmtest.NewServer(t,
		llmtest.Reply{ToolCalls: []session.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command": "wc -l < data/teams.jsonl"}`}},
			Usage: &llmtest.Usage{Prompt: 400, Completion: 20}, OnRequest: release},
		llmtest.Text("ANSWER: 3", 450, 5),
	)
	rec, _ := askJSON(t, srv, "--condition", "A", "--python", wrapper, "--data", data, "How many teams are there?")
	assert.Equal(t, "3", rec["answer"])
	assert.Equal(t, "stated", rec["answer_source"])
	assert.NotContains(t, rec, "prefix_cache", "A has no prefix")
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	var tool string
	for _, m := range reqs[1].Body.Messages {
		if m.Role == "tool" {
			tool = m.Content
		}
	}
	assert.Contains(t, tool, "exit status 0", "the bash call ran in the kernel, once it had started")
}
