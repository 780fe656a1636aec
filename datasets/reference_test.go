package datasets_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
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

// dataset generates a tier into a temporary folder and returns its tasks.
func dataset(t *testing.T, tier string, seed int64) (string, []datasets.Task) {
	t.Helper()
	tr, err := datasets.ParseTier(tier)
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = datasets.Generate(tr, seed).Write(dir, true)
	require.NoError(t, err)
	d, _, err := datasets.Load(dir)
	require.NoError(t, err)
	tasks, err := datasets.Tasks(d)
	require.NoError(t, err)
	return dir, tasks
}

func TestTasksShape(t *testing.T) {
	for _, tier := range []string{"s", "m", "xl"} {
		t.Run(tier, func(t *testing.T) {
			_, tasks := dataset(t, tier, 1)
			require.Len(t, tasks, 24)
			perTemplate := map[string]int{}
			ids := map[string]bool{}
			for _, task := range tasks {
				perTemplate[task.Template]++
				assert.False(t, ids[task.ID], "duplicate id %s", task.ID)
				ids[task.ID] = true
				assert.Regexp(t, `^`+tier+`-t[1-8]-[1-3]$`, task.ID)
				assert.NotEmpty(t, task.Question)
				switch g := task.Gold.(type) {
				case int:
					assert.Positive(t, g, task.ID)
				case float64:
					assert.Positive(t, g, task.ID)
				case string:
					assert.NotEmpty(t, g, task.ID)
				case []string:
					assert.NotEmpty(t, g, task.ID)
					if task.Template == "t8" {
						assert.Len(t, g, 3, task.ID)
					}
				default:
					t.Errorf("%s: gold of type %T", task.ID, g)
				}
			}
			assert.Len(t, perTemplate, 8)
			for tpl, n := range perTemplate {
				assert.Equal(t, 3, n, tpl)
			}
			b, err := json.Marshal(tasks[0])
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal(b, &m))
			assert.ElementsMatch(t, []string{"id", "template", "question", "params", "answer_type", "gold"}, keys(m))
		})
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestTasksDeterministic(t *testing.T) {
	_, a := dataset(t, "s", 7)
	_, b := dataset(t, "s", 7)
	assert.Equal(t, a, b)
	_, c := dataset(t, "s", 8)
	assert.NotEqual(t, a, c, "another seed asks other questions")
}

func goKernel(t *testing.T, dir string) kernel.Kernel {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	tr, err := kernel.NewLocal(kernel.LocalConfig{Argv: []string{exe}, Env: []string{serveGoEnv + "=1"}, DataDir: dir})
	require.NoError(t, err)
	return kerneltest.Start(t, kernel.Go, tr)
}

func runCell(t *testing.T, k kernel.Kernel, code string) kernel.Result {
	t.Helper()
	res, err := k.Execute(context.Background(), code, kernel.ExecOptions{Timeout: 2 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, kernel.StatusOK, res.Status, "cell:\n%s\nerror: %+v\nstderr: %s", code, res.Error, res.Stderr)
	return res
}

// gradeAnswer runs a reference solution and grades its ANSWER against gold.
func gradeAnswer(t *testing.T, k kernel.Kernel, task datasets.Task, code string) {
	t.Helper()
	res := runCell(t, k, code)
	require.True(t, res.Answered(), "%s: no ANSWER from\n%s", task.ID, code)
	ok, reason := datasets.Grade(task, string(res.Answer))
	assert.True(t, ok, "%s (%s): %s; answer %s, gold %v", task.ID, task.Question, reason, res.Answer, task.Gold)
}

// TestReferenceSolutions is the cross-check: every reference solution of
// every task, run in the real kernels, grades correct against gold.
func TestReferenceSolutions(t *testing.T) {
	for _, tier := range []string{"s", "xl"} {
		t.Run(tier, func(t *testing.T) {
			dir, tasks := dataset(t, tier, 1)

			t.Run("python-pm", func(t *testing.T) {
				k := kerneltest.Python(t, dir)
				runCell(t, k, datasets.PythonLoader)
				for _, task := range tasks {
					code, err := datasets.Reference(task, datasets.PythonPM)
					require.NoError(t, err)
					gradeAnswer(t, k, task, code)
				}
			})
			t.Run("python-load", func(t *testing.T) {
				k := kerneltest.Python(t, dir)
				for _, task := range tasks {
					code, err := datasets.Reference(task, datasets.PythonLoad)
					require.NoError(t, err)
					gradeAnswer(t, k, task, code)
				}
			})
			t.Run("go-pm", func(t *testing.T) {
				// GoLoader binds what the pm-go prefix binds; datasets does not
				// import prefixes, so the bodies after pm-go's own cells are
				// run by TestGoPMReferenceSolutions in prefixes.
				k := goKernel(t, dir)
				runCell(t, k, datasets.GoLoader)
				for _, task := range tasks {
					code, err := datasets.Reference(task, datasets.GoPM)
					require.NoError(t, err)
					gradeAnswer(t, k, task, code)
				}
			})
			t.Run("go-load", func(t *testing.T) {
				// The whole self-loading program, in a fresh kernel, for one task per template.
				for _, task := range tasks {
					if !strings.HasSuffix(task.ID, "-1") {
						continue
					}
					code, err := datasets.Reference(task, datasets.GoLoad)
					require.NoError(t, err)
					gradeAnswer(t, goKernel(t, dir), task, code)
				}
			})
		})
	}
}

func TestReferenceUnknown(t *testing.T) {
	_, err := datasets.Reference(datasets.Task{ID: "x", Template: "t9"}, datasets.PythonPM)
	assert.ErrorContains(t, err, `unknown template "t9"`)
	_, err = datasets.Reference(datasets.Task{ID: "x", Template: "t1"}, "cobol")
	assert.ErrorContains(t, err, "unknown solution kind")
}
