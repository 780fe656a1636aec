package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/llm/llmtest"
)

// Cells that kill their kernel, each in its own way, as a fenced block
// that both C (one shot) and D (the bare loop, which strips the fences)
// run.
const (
	exitCell = "```python\nimport os\nos._exit(1)\n```"
	// SIGALRM is the soft timeout: ignored, the loop runs on to the hard
	// deadline (--timeout + the client's grace), where the kernel is killed.
	deadlineCell = "```python\nimport signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True: pass\n```"
	// A gibibyte of text, past the container's --memory.
	oomCell = "```python\ns = 'x' * (1 << 30)\nANSWER(len(s))\n```"
)

// TestBenchKernelDeathsAreTheModels: a kernel the model's own code kills
// (an exit, a cell past the hard deadline, out of memory) is the model's
// result in C and D: class model, status kernel_died with its cause, wrong
// in accuracy, a finished run (exit 0), and never run again on resume.
func TestBenchKernelDeathsAreTheModels(t *testing.T) {
	for _, tc := range []struct {
		name, sandbox string
		cells         map[string]string // by task: the cell that kills the kernel
		deaths        map[string]string // by task: its cause
		// timeout is --timeout: short where a cell is to meet the hard
		// deadline, long where one is to die of something else first,
		// however slowly a loaded machine fills the memory.
		timeout string
	}{
		{"local", "local", map[string]string{"s-t1-1": exitCell, "s-t1-2": deadlineCell},
			map[string]string{"s-t1-1": "exit 1", "s-t1-2": "deadline"}, "1s"},
		{"docker", "docker", map[string]string{"s-t1-1": exitCell, "s-t1-2": deadlineCell},
			map[string]string{"s-t1-1": "exit 1", "s-t1-2": "deadline"}, "1s"},
		{"docker-oom", "docker", map[string]string{"s-t5-1": oomCell},
			map[string]string{"s-t5-1": "oom"}, "60s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sandbox == "docker" {
				requireDocker(t)
			} else {
				requirePython(t)
			}
			data := pmData(t)
			tasks := builtinTasks(t, data)
			t.Setenv("OPENAI_API_KEY", "sk-test")
			scripts := map[string][]llmtest.Reply{}
			var ids string
			for id, cell := range tc.cells {
				reply := llmtest.Text(cell, 700, 20)
				scripts[tasks[id].Question] = []llmtest.Reply{reply, reply} // one per condition
				if ids != "" {
					ids += ","
				}
				ids += id
			}
			api := newTaskAPI(t, scripts)
			out := filepath.Join(t.TempDir(), "run")
			args := []string{"bench", "--model", "m", "--base-url", api.URL, "--data", data, "--conditions", "C,D",
				"--task", ids, "--parallel", "2", "--max-restarts", "0", "--timeout", tc.timeout, "--memory", "256m",
				"--sandbox", tc.sandbox, "--out", out}
			if tc.sandbox == "local" && os.Geteuid() != 0 {
				args = append(args, "--unsafe-local") // the kernels run as the user, who can read the run
			}

			got := runCLI(t, "", args...)
			require.Equal(t, exitOK, got.code, "a finished run with wrong answers exits 0\n%s", got.stderr)
			n := len(tc.cells)
			assert.Regexp(t, `(?m)^C\s+0/`+strconv.Itoa(n)+`\s+0%\s+0\s`, got.stdout, "graded, wrong, not infra")
			assert.Regexp(t, `(?m)^D\s+0/`+strconv.Itoa(n)+`\s+0%\s+0\s`, got.stdout, "graded, wrong, not infra")
			assert.Regexp(t, `(?m)^C\s+`+strconv.Itoa(n)+` kernel death\(s\): the model's own code`, got.stdout, "counted on a line of their own")
			first := readTrials(t, out)
			require.Len(t, first, 2*n)
			for _, tr := range first {
				assert.Equal(t, bench.ClassModel, tr.Class, "%s: %s", tr.Key, tr.Error)
				assert.Equal(t, "kernel_died", string(tr.Status), "%s: %s", tr.Key, tr.Error)
				assert.Equal(t, tc.deaths[tr.Task], tr.Death, "%s: %s", tr.Key, tr.Error)
				assert.False(t, tr.Correct)
				assert.Equal(t, "no_answer", tr.Verdict)
			}
			counts := api.counts()

			got = runCLI(t, "", args...)
			require.Equal(t, exitOK, got.code, got.stderr)
			assert.Contains(t, got.stderr, "resuming: "+strconv.Itoa(2*n)+" of "+strconv.Itoa(2*n)+" trials already have a result")
			assert.Equal(t, counts, api.counts(), "no trial asked the model again")
			assert.Equal(t, first, readTrials(t, out), "no new line")
		})
	}
}
