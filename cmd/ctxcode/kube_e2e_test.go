package main

// The command line on a real Kubernetes cluster (internal/clustertest),
// as a user runs it: `make e2e` only (CTXCODE_E2E=1).

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/internal/clustertest"
	"github.com/ctxcode/ctxcode/llm/llmtest"
	"github.com/ctxcode/ctxcode/sandbox"
)

func TestE2EKubeCLI(t *testing.T) {
	// Before pmData, which moves the cache folder the binaries are in.
	c := clustertest.Start(t, sandbox.KernelImage())
	kube := []string{"--sandbox", "kubernetes", "--kubeconfig", c.Kubeconfig, "--namespace", c.Namespace}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute) // a hang guard, well inside make e2e's -timeout
	defer cancel()
	admin, err := sandbox.ConnectKube(ctx, sandbox.KubeOptions{Kubeconfig: c.Kubeconfig, Namespace: c.Namespace})
	require.NoError(t, err)
	podsAPI := admin.Client.CoreV1().Pods(c.Namespace)
	pods := func(t *testing.T) []string {
		t.Helper()
		l, err := podsAPI.List(ctx, metav1.ListOptions{LabelSelector: sandbox.LabelSession})
		require.NoError(t, err)
		var names []string
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		return names
	}
	data := pmData(t)

	t.Run("exec", func(t *testing.T) {
		got := runCLI(t, "", append(append([]string{"exec"}, kube...), "--data", data, "--",
			"x = 41", "x + 1", "import os; sorted(os.listdir('data'))[:1]")...)
		require.Equal(t, exitOK, got.code, got.stderr)
		assert.Contains(t, got.stdout, "Out[2]: 42\n")
		assert.Contains(t, got.stdout, "Out[3]: ['")
		assert.Empty(t, pods(t), "no pod is left")
	})

	t.Run("bench of 24 reference trials in D", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		got := runCLI(t, "", append([]string{"bench", "--model", "reference", "--data", data, "--conditions", "D",
			"--parallel", "2", "--out", out}, kube...)...)
		require.Equal(t, exitOK, got.code, got.stderr)
		assert.Regexp(t, `(?m)^D\s+24/24\s+100%\s+0\s`, got.stdout)
		trials := readTrials(t, out)
		require.Len(t, trials, 24)
		for _, tr := range trials {
			assert.Equal(t, bench.ClassModel, tr.Class, tr.Key.String())
			assert.True(t, tr.Correct, "%s: %s %s", tr.Key, tr.Verdict, tr.Error)
		}
		assert.Empty(t, pods(t), "no pod is left")
	})

	t.Run("condition A's shell", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "run")
		got := runCLI(t, "", append([]string{"bench", "--model", "reference", "--data", data, "--conditions", "A",
			"--task", "s-t1-1,s-t4-1,s-t5-1", "--parallel", "2", "--out", out}, kube...)...)
		require.Equal(t, exitOK, got.code, got.stderr)
		assert.Regexp(t, `(?m)^A\s+3/3\s+100%\s+0\s`, got.stdout)
		for _, tr := range readTrials(t, out) {
			assert.True(t, tr.Correct, "%s: %s %s", tr.Key, tr.Verdict, tr.Error)
			l := readTrajectory(t, filepath.Join(out, tr.Trajectory))
			shell := 0
			for _, e := range l.Events {
				if e.Kind == "cell" && e.Cell != nil && e.Cell.ExitCode != nil {
					shell++ // a bash command, with how it ended
				}
			}
			assert.Positive(t, shell, "%s ran bash commands", tr.Key)
		}
		assert.Empty(t, pods(t), "no pod is left")
	})

	t.Run("a pod killed mid-trial", func(t *testing.T) {
		tasks := builtinTasks(t, data)
		t.Setenv("OPENAI_API_KEY", "sk-test")
		q := tasks["s-t1-1"].Question
		// The first cell says it runs through /tmp, an emptyDir this
		// machine sees; the test then deletes its Pod.
		api := newTaskAPI(t, map[string][]llmtest.Reply{
			q: {llmtest.Text("open('/tmp/started', 'w').close()\nimport time; time.sleep(600)", 700, 10), answerReply(t, tasks["s-t1-1"].Gold)},
		})
		stop := make(chan struct{})
		killed := make(chan string, 1)
		go func() {
			defer close(killed)
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond): // polls the Pods' /tmp for the cell's mark
				}
				l, err := podsAPI.List(ctx, metav1.ListOptions{LabelSelector: sandbox.LabelSession})
				if err != nil {
					t.Errorf("list pods: %v", err)
					return
				}
				for _, p := range l.Items {
					if _, err := os.Stat(filepath.Join(c.EmptyDir(string(p.UID), "tmp"), "started")); err != nil {
						continue
					}
					if err := podsAPI.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
						t.Errorf("delete pod %s: %v", p.Name, err)
					}
					killed <- p.Name
					return
				}
			}
		}()
		out := filepath.Join(t.TempDir(), "run")
		got := runCLI(t, "", append([]string{"bench", "--model", "m", "--base-url", api.URL, "--data", data, "--conditions", "D",
			"--task", "s-t1-1", "--parallel", "1", "--out", out}, kube...)...)
		close(stop)
		victim := <-killed
		require.NotEmpty(t, victim, "a pod ran the cell")
		require.Equal(t, exitOK, got.code, got.stderr)
		trials := readTrials(t, out)
		require.Len(t, trials, 1)
		tr := trials[0]
		assert.True(t, tr.Correct, "%s %s", tr.Verdict, tr.Error)
		assert.Equal(t, 1, tr.Restarts, "the kernel was restarted once")
		reqs := api.requests(q)
		require.Len(t, reqs, 2)
		last := reqs[1].Body.Messages[len(reqs[1].Body.Messages)-1].Content
		assert.Contains(t, last, "restarted", "the model is told")
		assert.Contains(t, last, "the prefix ran again", "over the prefix, as in Docker")
		assert.Empty(t, pods(t), "no pod is left")
	})

	t.Run("status and prune", func(t *testing.T) {
		got := runCLI(t, "", append([]string{"sandbox", "status"}, kube...)...)
		require.Equal(t, exitOK, got.code, got.stderr)
		assert.Contains(t, got.stdout, c.Namespace)
		got = runCLI(t, "", append([]string{"sandbox", "prune"}, kube...)...)
		require.Equal(t, exitOK, got.code, got.stderr)
	})

	t.Run("a user without the Role", func(t *testing.T) {
		nobody := c.UserKubeconfig(t, "nobody")
		for _, args := range [][]string{
			{"exec", "--sandbox", "kubernetes", "--kubeconfig", nobody, "--", "1+1"},
			{"sandbox", "status", "--sandbox", "kubernetes", "--kubeconfig", nobody},
		} {
			got := runCLI(t, "", args...)
			assert.Equal(t, exitInfra, got.code, "%s: %s", strings.Join(args, " "), got.stderr)
			assert.Contains(t, got.stderr, "kubernetes namespace "+c.Namespace, got.stderr)
			assert.Contains(t, got.stderr, "needs a Role there", got.stderr)
			assert.Contains(t, got.stderr, "see the README", got.stderr)
		}
		assert.Empty(t, pods(t))
	})
}
