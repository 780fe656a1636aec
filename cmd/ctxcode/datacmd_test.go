package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
)

func TestDataGen(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pm")
	got := runCLI(t, "", "data", "gen", "--tier", "s", "--seed", "7", "--out", out)
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Empty(t, got.stderr)
	assert.Equal(t, "wrote tier s (seed 7) to "+out+"\n"+
		"  teams.jsonl          3 rows\n"+
		"  users.jsonl         30 rows\n"+
		"  projects.jsonl       8 rows\n"+
		"  tasks.jsonl        500 rows\n"+
		"  events.jsonl      2000 rows\n", got.stdout)
	d, m, err := datasets.Load(out)
	require.NoError(t, err)
	assert.Equal(t, int64(7), m.Seed)
	assert.Equal(t, datasets.Generate(datasets.Tiers[0], 7), d)
}

func TestDataGenForce(t *testing.T) {
	out := t.TempDir()
	keep := filepath.Join(out, "notes.txt")
	require.NoError(t, os.WriteFile(keep, []byte("mine"), 0o644))

	got := runCLI(t, "", "data", "gen", "--tier", "s", "--out", out)
	assert.Equal(t, exitUsage, got.code)
	assert.Contains(t, got.stderr, "not empty")
	assert.Contains(t, got.stderr, "--force")
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing touched")

	got = runCLI(t, "", "data", "gen", "--tier", "s", "--out", out, "--force")
	require.Equal(t, exitOK, got.code, got.stderr)
	_, _, err = datasets.Load(out)
	require.NoError(t, err)
	b, err := os.ReadFile(keep)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))
}

func TestDataUsageErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "pm")
	tests := []struct {
		name     string
		args     []string
		code     int
		stderr   []string
		noStdout bool
	}{
		{"no subcommand", []string{"data"}, exitUsage, []string{"data: missing subcommand", "ctxcode data gen --tier"}, true},
		{"unknown subcommand", []string{"data", "make"}, exitUsage, []string{`unknown subcommand "make"`, "ctxcode data gen"}, true},
		{"unknown tier", []string{"data", "gen", "--tier", "xxl", "--out", out}, exitUsage, []string{`unknown tier "xxl"`, "s, m, xl"}, true},
		{"no --out", []string{"data", "gen", "--tier", "s"}, exitUsage, []string{"--out is required"}, true},
		{"bad seed", []string{"data", "gen", "--seed", "one", "--out", out}, exitUsage, []string{"-seed", "ctxcode data gen -h"}, true},
		{"extra argument", []string{"data", "gen", "--out", out, "more"}, exitUsage, []string{`unexpected argument "more"`}, true},
		{"help", []string{"data", "gen", "-h"}, exitOK, []string{"Usage:", "--tier", "--force"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, "", tt.args...)
			assert.Equal(t, tt.code, got.code, got.stderr)
			for _, s := range tt.stderr {
				assert.Contains(t, got.stderr, s)
			}
			if tt.noStdout {
				assert.Empty(t, got.stdout)
			}
			assert.NoDirExists(t, out, "a refused command writes nothing")
		})
	}
}

func TestDataInRootUsage(t *testing.T) {
	got := runCLI(t, "", "help")
	assert.Contains(t, got.stdout, "  data      generate a project-management dataset (data gen)")
}
