package prefixes_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/session"
)

// serveGoEnv makes the test binary serve the Go kernel.
const serveGoEnv = "CTXCODE_TEST_SERVE_GO_KERNEL"

func TestMain(m *testing.M) {
	if os.Getenv(serveGoEnv) == "1" {
		if err := kernel.ServeGoStdio(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "go kernel:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startGo starts a Go kernel (this test binary) with dataDir as its data/.
func startGo(t *testing.T, dataDir string) kernel.Kernel {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	tr, err := kernel.NewLocal(kernel.LocalConfig{Argv: []string{exe}, Env: []string{serveGoEnv + "=1"}, DataDir: dataDir})
	require.NoError(t, err)
	k, err := kernel.Start(context.Background(), kernel.Go, tr, kernel.ClientOptions{})
	if k != nil {
		t.Cleanup(func() { _ = k.Close() })
	}
	require.NoError(t, err)
	return k
}

// generate writes a dataset of a tier into a temporary folder.
func generate(t *testing.T, tier string, seed int64) (string, *datasets.Dataset) {
	t.Helper()
	tr, err := datasets.ParseTier(tier)
	require.NoError(t, err)
	dir := t.TempDir()
	d := datasets.Generate(tr, seed)
	_, err = d.Write(dir, true)
	require.NoError(t, err)
	return dir, d
}

// buildPMGo builds the pm-go prefix in a fresh Go kernel over dir.
func buildPMGo(t *testing.T, dir string) (kernel.Kernel, []session.Cell) {
	t.Helper()
	k := startGo(t, dir)
	p, err := prefixes.Load("pm-go")
	require.NoError(t, err)
	cells, err := prefixes.Build(context.Background(), k, p, kernel.ExecOptions{Timeout: time.Minute})
	require.NoError(t, err)
	require.Len(t, cells, len(p.Cells))
	return k, cells
}

func TestLoadPMGo(t *testing.T) {
	assert.Contains(t, prefixes.Builtins(), "pm-go")
	p, err := prefixes.Load("pm-go")
	require.NoError(t, err)
	assert.Equal(t, "pm-go", p.Name)
	assert.Equal(t, kernel.Go, p.Language)
	assert.Equal(t, "builtin:pm-go.txt", p.Source)
	assert.Contains(t, p.Rules, "slices of the structs Team, User")
	assert.NotEmpty(t, p.Description)
}

// TestBuildPMGo builds pm-go over a generated dataset: the lengths are the
// dataset's, every record shows its fields, the variables stay bound, and
// two builds render the same text.
func TestBuildPMGo(t *testing.T) {
	dir, d := generate(t, "s", 1)
	k, cells := buildPMGo(t, dir)
	assert.Equal(t, "events.jsonl\nprojects.jsonl\ntasks.jsonl\nteams.jsonl\nusers.jsonl\n", cells[0].Result.Stdout, "the data files, not the manifest")
	assert.Equal(t, fmt.Sprintf("map[events:%d projects:%d tasks:%d teams:%d users:%d]",
		len(d.Events), len(d.Projects), len(d.Tasks), len(d.Teams), len(d.Users)), cells[1].Result.Value)
	assert.Equal(t, "[blocked done in_progress review todo]\n[commented created reassigned status_changed]\n", cells[2].Result.Stdout)
	last := d.Tasks[len(d.Tasks)-1]
	assert.Contains(t, cells[4].Result.Stdout, "{ID:"+last.ID+" ProjectID:"+last.ProjectID+" Title:"+last.Title, "the last task shows every field")
	assert.Contains(t, cells[4].Result.Stdout, "EstimateHours:")
	assert.Contains(t, cells[5].Result.Stdout, "{ID:"+d.Events[len(d.Events)-1].ID+" ")
	for i, c := range cells {
		assert.Equal(t, i+1, c.Result.Count)
		assert.Empty(t, c.Result.Stderr, "cell %d", i+1)
	}

	res, err := k.Execute(context.Background(), "n := 0\nfor _, t := range tasks {\n\tif t.Status == \"blocked\" {\n\t\tn++\n\t}\n}\nn > 0", kernel.ExecOptions{})
	require.NoError(t, err)
	assert.Equal(t, "true", res.Value, "the model continues with the bound variables")

	_, again := buildPMGo(t, dir)
	assert.Equal(t, session.RenderCells(cells), session.RenderCells(again), "the build is deterministic")
}

// TestGoPMReferenceSolutions runs every task's go-pm reference solution
// after pm-go's own cells, and grades it.
func TestGoPMReferenceSolutions(t *testing.T) {
	for _, tier := range []string{"s", "xl"} {
		t.Run(tier, func(t *testing.T) {
			dir, d := generate(t, tier, 1)
			tasks, err := datasets.Tasks(d)
			require.NoError(t, err)
			k, _ := buildPMGo(t, dir)
			for _, task := range tasks {
				code, err := datasets.Reference(task, datasets.GoPM)
				require.NoError(t, err)
				gradeGo(t, k, task, code)
			}
		})
	}
}

// TestGoLoaderMatchesPMGo: GoLoader declares pm-go's types token for token,
// so a go-load solution also runs in a session that built pm-go (the Go
// kernel refuses to change a declared type).
func TestGoLoaderMatchesPMGo(t *testing.T) {
	p, err := prefixes.Load("pm-go")
	require.NoError(t, err)
	var src strings.Builder
	for _, c := range p.Cells {
		src.WriteString(c.Code + "\n")
	}
	decls := regexp.MustCompile(`(?ms)^type \w+ struct \{$.*?^\}$`).FindAllString(src.String(), -1)
	require.Len(t, decls, 5)
	for _, decl := range decls {
		assert.Contains(t, datasets.GoLoader, decl)
	}
	imports := regexp.MustCompile(`(?s)^import \(.*?\n\)\n`).FindString(p.Cells[0].Code)
	require.NotEmpty(t, imports)
	assert.True(t, strings.HasPrefix(datasets.GoLoader, imports), "GoLoader imports what pm-go imports:\n%s", imports)

	dir, d := generate(t, "s", 1)
	tasks, err := datasets.Tasks(d)
	require.NoError(t, err)
	k, _ := buildPMGo(t, dir)
	for _, task := range tasks {
		if strings.HasSuffix(task.ID, "-1") {
			code, err := datasets.Reference(task, datasets.GoLoad)
			require.NoError(t, err)
			gradeGo(t, k, task, code)
		}
	}
}

// gradeGo runs a reference solution and grades its ANSWER against gold.
func gradeGo(t *testing.T, k kernel.Kernel, task datasets.Task, code string) {
	t.Helper()
	res, err := k.Execute(context.Background(), code, kernel.ExecOptions{Timeout: 2 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, kernel.StatusOK, res.Status, "%s:\n%s\nerror: %+v", task.ID, code, res.Error)
	require.True(t, res.Answered(), "%s: no ANSWER from\n%s", task.ID, code)
	ok, reason := datasets.Grade(task, string(res.Answer))
	assert.True(t, ok, "%s (%s): %s; answer %s, gold %v", task.ID, task.Question, reason, res.Answer, task.Gold)
}
