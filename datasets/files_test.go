package datasets_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/internal/datatest"
)

// pinnedS1 are the sha256 of tier s, seed 1. A change to the generator
// changes them: bump datasets.GeneratorVersion and paste the new values.
var pinnedS1 = map[string]string{
	"teams.jsonl":    "3c893381b08a76c45f250f8b4ce0c59c0cbe8c6cd56bd055d66d5b896fa40424",
	"users.jsonl":    "ac2c76deb767d295badf5c653dd0263f62b72bd7c44115e163e9ada2aab320e4",
	"projects.jsonl": "63fce383e3e4f1cbf2ec932b9177057c4d71bf31ceda82454d9822c8d3a5b2bb",
	"tasks.jsonl":    "9f0684d952f2ac925da66ac37d7d729df11c825583e8423107bc661ea48f0338",
	"events.jsonl":   "50478bc2c8cf1da228db43faba4a0af101bde0a5464c3bb393375c313ca93e24",
}

func writeTier(t *testing.T, tier string, seed int64) (string, *datasets.Manifest) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	m, err := datasets.Generate(mustTier(t, tier), seed).Write(dir, false)
	require.NoError(t, err)
	return dir, m
}

func fileSHA(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestWritePinnedBytes(t *testing.T) {
	dir, m := writeTier(t, "s", 1)
	got := map[string]string{}
	for _, name := range datasets.Files {
		got[name+".jsonl"] = fileSHA(t, filepath.Join(dir, name+".jsonl"))
	}
	assert.Equal(t, got, m.SHA256, "the manifest holds the files' sha256")
	assert.Equal(t, pinnedS1, got, "generator output for tier s, seed 1 changed: bump GeneratorVersion and update pinnedS1")
}

func TestWriteIsByteIdentical(t *testing.T) {
	a, _ := writeTier(t, "xl", 3)
	b, _ := writeTier(t, "xl", 3)
	files := []string{datasets.ManifestFile}
	for _, name := range datasets.Files {
		files = append(files, name+".jsonl")
	}
	for _, file := range files {
		ab, err := os.ReadFile(filepath.Join(a, file))
		require.NoError(t, err)
		bb, err := os.ReadFile(filepath.Join(b, file))
		require.NoError(t, err)
		assert.True(t, string(ab) == string(bb), "%s differs between two writes", file)
	}
}

func TestWriteManifest(t *testing.T) {
	dir, m := writeTier(t, "s", 1)
	b, err := os.ReadFile(filepath.Join(dir, datasets.ManifestFile))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(b), "}\n"), "ends with a newline")
	assert.Contains(t, string(b), "\n  \"tier\": \"s\",\n", "indented")
	var onDisk datasets.Manifest
	require.NoError(t, json.Unmarshal(b, &onDisk))
	assert.Equal(t, *m, onDisk)
	assert.Equal(t, datasets.Manifest{
		Tier: "s", Seed: 1, GeneratorVersion: datasets.GeneratorVersion,
		Counts: map[string]int{"teams.jsonl": 3, "users.jsonl": 30, "projects.jsonl": 8, "tasks.jsonl": 500, "events.jsonl": 2000},
		SHA256: m.SHA256,
	}, onDisk)
	// JSON lines: one object per line, fields in struct order.
	tasks, err := os.ReadFile(filepath.Join(dir, "tasks.jsonl"))
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(tasks), "\n")
	assert.Regexp(t, `^\{"id":"K00001","project_id":"P\d\d","title":"[^"]+","status":"[a-z_]+","priority":"[a-z]+","assignee_id":(null|"U\d{3}"),"reporter_id":"U\d{3}","created_at":"2025-01-01T\d\d:\d\d:\d\dZ","due_date":(null|"\d{4}-\d\d-\d\d"),"estimate_hours":[\d.]+\}$`, first)
}

func TestLoadRoundTrip(t *testing.T) {
	d := datasets.Generate(mustTier(t, "s"), 9)
	dir := t.TempDir()
	wrote, err := d.Write(dir, false)
	require.NoError(t, err)
	got, m, err := datasets.Load(dir)
	require.NoError(t, err)
	assert.Equal(t, wrote, m)
	assert.Equal(t, d, got)
}

func TestWriteRefusesNonEmptyFolder(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(keep, []byte("mine"), 0o644))
	d := datasets.Generate(mustTier(t, "s"), 1)

	_, err := d.Write(dir, false)
	require.ErrorIs(t, err, datasets.ErrDirNotEmpty)
	assert.Contains(t, err.Error(), dir)
	assert.Contains(t, err.Error(), "--force")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "refusing touches nothing")
	b, err := os.ReadFile(keep)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))

	_, err = d.Write(dir, true)
	require.NoError(t, err, "force writes")
	_, _, err = datasets.Load(dir)
	require.NoError(t, err)
	b, err = os.ReadFile(keep)
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b), "force leaves other files alone")
}

func TestWriteForceReplacesDataset(t *testing.T) {
	dir, _ := writeTier(t, "s", 1)
	_, err := datasets.Generate(mustTier(t, "s"), 2).Write(dir, true)
	require.NoError(t, err)
	d, m, err := datasets.Load(dir)
	require.NoError(t, err)
	assert.Equal(t, int64(2), m.Seed)
	assert.Equal(t, int64(2), d.Seed)
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name   string
		spoil  func(t *testing.T, dir string) // nil: no dataset at all
		is     error
		naming []string // what the message must say
	}{
		{"no manifest", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, datasets.ManifestFile)))
		}, datasets.ErrNotDataset, []string{"is not a ctxcode dataset (no manifest.json)", "make one with `ctxcode data gen`"}},
		{"empty folder", func(t *testing.T, dir string) {
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.Mkdir(dir, 0o755))
		}, datasets.ErrNotDataset, []string{"is not a ctxcode dataset"}},
		{"a byte of tasks.jsonl changed", func(t *testing.T, dir string) {
			path := filepath.Join(dir, "tasks.jsonl")
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			i := strings.Index(string(b), `"priority":"`) + len(`"priority":"`)
			b[i] ^= 0x20 // lower case to upper case
			require.NoError(t, os.WriteFile(path, b, 0o644))
		}, datasets.ErrDatasetChanged, []string{"tasks.jsonl", "changed since generation", "ctxcode data gen", "--force"}},
		{"a file missing", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, "events.jsonl")))
		}, datasets.ErrDatasetChanged, []string{"events.jsonl is missing", "--force"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, _ := writeTier(t, "s", 1)
			tt.spoil(t, dir)
			d, m, err := datasets.Load(dir)
			require.ErrorIs(t, err, tt.is)
			assert.Nil(t, d)
			assert.Nil(t, m)
			assert.Contains(t, err.Error(), dir)
			for _, s := range tt.naming {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestErrNotDatasetMessage(t *testing.T) {
	dir := t.TempDir()
	_, _, err := datasets.Load(dir)
	require.True(t, errors.Is(err, datasets.ErrNotDataset))
	assert.Equal(t, dir+" is not a ctxcode dataset (no manifest.json); make one with `ctxcode data gen`", err.Error())
}

// TestLoadNeverOpensAPipe: a named pipe in the place of the manifest or of
// a data file is an error, found without opening it (datatest.Pipe fails
// the test if it is): a read would wait for a writer forever.
func TestLoadNeverOpensAPipe(t *testing.T) {
	for _, name := range []string{datasets.ManifestFile, "events.jsonl"} {
		t.Run(name, func(t *testing.T) {
			dir, _ := writeTier(t, "s", 1)
			require.NoError(t, os.Remove(filepath.Join(dir, name)))
			datatest.Pipe(t, filepath.Join(dir, name))
			_, _, err := datasets.Load(dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), name+" is not a regular file")
		})
	}
}
