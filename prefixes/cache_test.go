package prefixes_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

func cacheFixture(t *testing.T) (prefixes.Cache, prefixes.CacheKey, *prefixes.Prefix, []session.Cell) {
	t.Helper()
	p, err := prefixes.Parse("t.py", []byte("# %%\nx = 41\n# %%\nx + 1\n"))
	require.NoError(t, err)
	k, err := prefixes.KeyFor(p, "data-hash", "docker sha256:abc")
	require.NoError(t, err)
	null := json.RawMessage("null") // as a result comes from a kernel
	cells := []session.Cell{
		{Code: "x = 41", Result: kernel.Result{Count: 1, Status: kernel.StatusOK, Answer: null}, From: session.FromPrefix},
		{Code: "x + 1", Result: kernel.Result{Count: 2, Status: kernel.StatusOK, Value: "42", Answer: null, ElapsedMS: 3}, From: session.FromPrefix},
	}
	return prefixes.Cache{Dir: filepath.Join(t.TempDir(), "transcripts")}, k, p, cells
}

func TestCacheKeepsWhatItStores(t *testing.T) {
	c, k, p, cells := cacheFixture(t)
	got, err := c.Load(k, p)
	require.NoError(t, err)
	assert.Nil(t, got, "a miss before anything is stored")

	require.NoError(t, c.Store(k, p, "python 3.11.7", cells))
	got, err = c.Load(k, p)
	require.NoError(t, err)
	assert.Equal(t, cells, got)

	// Stored again, the entry is replaced, and no temporary file is left.
	cells[1].Result.Value = "43"
	require.NoError(t, c.Store(k, p, "python 3.11.7", cells))
	got, err = c.Load(k, p)
	require.NoError(t, err)
	assert.Equal(t, "43", got[1].Result.Value)
	entries, err := os.ReadDir(c.Dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, filepath.Base(c.Path(k)), entries[0].Name())

	// Another key is another entry.
	other := k
	other.Data = "other-data"
	got, err = c.Load(other, p)
	require.NoError(t, err)
	assert.Nil(t, got)
}

func TestCacheOff(t *testing.T) {
	_, k, p, cells := cacheFixture(t)
	var off prefixes.Cache
	require.NoError(t, off.Store(k, p, "", cells))
	got, err := off.Load(k, p)
	assert.NoError(t, err)
	assert.Nil(t, got)

	// No runtime identity: nothing is looked up or kept.
	c, _, _, _ := cacheFixture(t)
	k.Runtime = ""
	require.NoError(t, c.Store(k, p, "", cells))
	assert.NoDirExists(t, c.Dir)
}

func TestCacheEntryThatCannotBeUsed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		entry func(t *testing.T, c prefixes.Cache, k prefixes.CacheKey, p *prefixes.Prefix, cells []session.Cell) string
		want  string
	}{
		{"not json", func(*testing.T, prefixes.Cache, prefixes.CacheKey, *prefixes.Prefix, []session.Cell) string {
			return `{"format": 1, "cells": [`
		}, "not an entry"},
		{"another format", func(*testing.T, prefixes.Cache, prefixes.CacheKey, *prefixes.Prefix, []session.Cell) string {
			return `{"format": 99}`
		}, "format 99, expected 1"},
		{"another key", func(t *testing.T, c prefixes.Cache, k prefixes.CacheKey, p *prefixes.Prefix, cells []session.Cell) string {
			other := k
			other.Runtime = "local /usr/bin/python3"
			return storedEntry(t, other, p, cells)
		}, "of another key"},
		{"too few cells", func(t *testing.T, c prefixes.Cache, k prefixes.CacheKey, p *prefixes.Prefix, cells []session.Cell) string {
			return storedEntry(t, k, p, cells[:1])
		}, "1 cells, but prefix t has 2"},
		{"other code", func(t *testing.T, c prefixes.Cache, k prefixes.CacheKey, p *prefixes.Prefix, cells []session.Cell) string {
			cells[1].Code = "x + 2"
			return storedEntry(t, k, p, cells)
		}, "cell 2 is not the code"},
		{"a failed cell", func(t *testing.T, c prefixes.Cache, k prefixes.CacheKey, p *prefixes.Prefix, cells []session.Cell) string {
			cells[0].Result.Status = kernel.StatusError
			return storedEntry(t, k, p, cells)
		}, `cell 1 has status "error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, k, p, cells := cacheFixture(t)
			body := tc.entry(t, c, k, p, cells)
			require.NoError(t, os.MkdirAll(c.Dir, 0o755))
			require.NoError(t, os.WriteFile(c.Path(k), []byte(body), 0o644))
			got, err := c.Load(k, p)
			assert.Nil(t, got)
			var ce *prefixes.CacheError
			require.True(t, errors.As(err, &ce), "%v", err)
			assert.Equal(t, c.Path(k), ce.File)
			assert.Contains(t, err.Error(), tc.want)

			// Storing replaces it.
			_, _, _, good := cacheFixture(t)
			require.NoError(t, c.Store(k, p, "", good))
			got, err = c.Load(k, p)
			require.NoError(t, err)
			assert.Equal(t, good, got)
		})
	}
}

// storedEntry is the text of the entry Store writes for k and cells.
func storedEntry(t *testing.T, k prefixes.CacheKey, p *prefixes.Prefix, cells []session.Cell) string {
	t.Helper()
	c := prefixes.Cache{Dir: t.TempDir()}
	require.NoError(t, c.Store(k, p, "", cells))
	b, err := os.ReadFile(c.Path(k))
	require.NoError(t, err)
	return string(b)
}

func TestDataHash(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a.csv")
	require.NoError(t, os.WriteFile(file, []byte("x\n1\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "b.csv"), []byte("y\n"), 0o644))
	hash := func() string {
		t.Helper()
		h, err := prefixes.DataHash(dir, false)
		require.NoError(t, err)
		return h
	}
	first := hash()
	assert.Len(t, first, 64)
	assert.Equal(t, first, hash(), "the same folder hashes the same")

	when := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, os.Chtimes(file, when, when))
	touched := hash()
	assert.NotEqual(t, first, touched, "a new modification time")

	require.NoError(t, os.WriteFile(file, []byte("x\n2\n"), 0o644))
	require.NoError(t, os.Chtimes(file, when, when))
	assert.Equal(t, touched, hash(), "the contents are not read: same size and time, same hash (the run's check finds the change)")

	require.NoError(t, os.WriteFile(file, []byte("x\n22\n"), 0o644))
	require.NoError(t, os.Chtimes(file, when, when))
	assert.NotEqual(t, touched, hash(), "a new size")

	require.NoError(t, os.Rename(filepath.Join(dir, "sub", "b.csv"), filepath.Join(dir, "sub", "c.csv")))
	assert.NotEqual(t, touched, hash(), "a new name")

	none, err := prefixes.DataHash("", false)
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestKeyFor(t *testing.T) {
	py, err := prefixes.Parse("t.py", []byte("# %%\nx = 1\n"))
	require.NoError(t, err)
	goSrc, err := prefixes.Parse("t.go", []byte("// %%\nx := 1\n"))
	require.NoError(t, err)
	kp, err := prefixes.KeyFor(py, "d", "r")
	require.NoError(t, err)
	kg, err := prefixes.KeyFor(goSrc, "d", "r")
	require.NoError(t, err)
	assert.NotEqual(t, kp.Prefix, kg.Prefix, "the language is part of the prefix's key")
	assert.Contains(t, kp.Driver, "python-driver ")
	assert.Contains(t, kg.Driver, "go-kernel ")
}
