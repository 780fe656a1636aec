package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/internal/datatest"
	"github.com/ctxcode/ctxcode/llm/llmtest"
	"github.com/ctxcode/ctxcode/session"
)

// The data folder of these tests (datatest.Folder) is one someone else
// prepared: creds.csv is a link to a private (0600) file outside it,
// alias.csv a link to sales.csv inside it, pipe.csv a named pipe, null.csv a
// link to a device, sock a socket.

// TestSecretBehindALinkNeverLeaves: with such a folder, prefix init, ask
// (its on-the-fly prefix, and condition A's skill document, bash and read)
// and bench (conditions A and D over a prefix that prints every file of
// data/) never let the private file's content reach a request the model's
// API receives or a trajectory, nor name the link to the model; each
// command warns, naming the link.
func TestSecretBehindALinkNeverLeaves(t *testing.T) {
	privateCache(t)
	t.Setenv("OPENAI_API_KEY", "sk-x")
	dir, _ := datatest.Folder(t)
	link := filepath.Join(dir, "creds.csv")
	warned := func(t *testing.T, stderr string) {
		t.Helper()
		assert.Contains(t, stderr, "ctxcode: warning: skipped "+link+": a link to ")
		assert.Contains(t, stderr, "outside the data folder; no kernel sees it (--follow-links takes it)")
	}

	t.Run("prefix init", func(t *testing.T) {
		got := runCLI(t, "", "prefix", "init", "--data", dir, "--style", "records")
		require.Equal(t, exitOK, got.code, got.stderr)
		assert.Contains(t, got.stdout, `sales = load_csv("sales.csv")`)
		assert.Contains(t, got.stdout, `alias = load_csv("alias.csv")`, "a link inside the folder is fine")
		assert.NotContains(t, got.stdout, "creds")
		assertNoSecret(t, "prefix init's output", got.stdout+got.stderr)
		warned(t, got.stderr)
	})
	for _, sb := range sandboxes(t) {
		t.Run(sb, func(t *testing.T) {
			needSandbox(t, sb)
			t.Run("ask", func(t *testing.T) {
				srv := llmtest.NewServer(t, llmtest.Text("ANSWER(len(sales))", 500, 5))
				traj := filepath.Join(t.TempDir(), "ask.jsonl")
				got := runCLI(t, "", "ask", "--sandbox", sb, "--model", "m", "--base-url", srv.URL, "--data", dir,
					"--trajectory", traj, "How many sales rows are there?")
				require.Equal(t, exitOK, got.code, got.stderr)
				warned(t, got.stderr)
				assertNothingLeaked(t, srv, traj, true)
				assert.Contains(t, string(srv.Requests()[0].Raw), "alias.csv", "the model is told of the link inside")
			})
			t.Run("ask condition A", func(t *testing.T) {
				// The model tries every way a kernel could see the file.
				srv := llmtest.NewServer(t,
					llmtest.Reply{ToolCalls: []session.ToolCall{{ID: "c1", Name: "bash",
						Arguments: `{"command": "ls -la data; cat data/creds.csv; cat /session/data/creds.csv"}`}}},
					llmtest.Reply{ToolCalls: []session.ToolCall{{ID: "c2", Name: "read", Arguments: `{"path": "data/creds.csv"}`}}},
					llmtest.Reply{ToolCalls: []session.ToolCall{{ID: "c3", Name: "read", Arguments: `{"path": "data/alias.csv"}`}}},
					llmtest.Text("ANSWER: 2", 500, 5))
				traj := filepath.Join(t.TempDir(), "ask-a.jsonl")
				got := runCLI(t, "", "ask", "--sandbox", sb, "--condition", "A", "--model", "m", "--base-url", srv.URL,
					"--data", dir, "--trajectory", traj, "How many sales rows are there?")
				require.Equal(t, exitOK, got.code, got.stderr)
				warned(t, got.stderr)
				assertNothingLeaked(t, srv, traj, false) // the model itself named creds.csv
				last := string(srv.Requests()[3].Raw)
				assert.Contains(t, last, "there is no file data/creds.csv", "read says what bash's cat says")
				assert.Contains(t, last, "north,10", "read serves the link inside the folder")
			})
			t.Run("bench", func(t *testing.T) {
				tasks, prefix := benchFiles(t)
				// One reply ends a trial in either condition: D runs the
				// first line; A takes the line ANSWER: 2.
				srv := llmtest.NewServer(t, llmtest.Text("ANSWER(2)\n\nANSWER: 2", 500, 5), llmtest.Text("ANSWER(2)\n\nANSWER: 2", 500, 5))
				out := filepath.Join(t.TempDir(), "run")
				got := runCLI(t, "", "bench", "--sandbox", sb, "--model", "m", "--base-url", srv.URL, "--tasks", tasks,
					"--data", dir, "--prefix", prefix, "--conditions", "A,D", "--out", out)
				require.Equal(t, exitOK, got.code, got.stderr)
				warned(t, got.stderr)
				trials := readTrials(t, out)
				require.Len(t, trials, 2)
				for _, tr := range trials {
					assertNoSecret(t, tr.Trajectory, readFile(t, filepath.Join(out, tr.Trajectory)))
				}
				assertRequestsClean(t, srv, true)
				assertNoSecret(t, "run.json", readFile(t, filepath.Join(out, bench.SpecFile)))
			})
		})
	}
}

// TestFollowLinksTakesLinksOut: --follow-links takes a link out of the
// folder (the user's choice), says so, and bench records it in run.json; a
// resume without it is refused, naming the difference.
func TestFollowLinksTakesLinksOut(t *testing.T) {
	requirePython(t)
	privateCache(t)
	t.Setenv("OPENAI_API_KEY", "sk-x")
	dir, secret := datatest.Folder(t)
	link := filepath.Join(dir, "creds.csv")

	got := runCLI(t, "", "prefix", "init", "--data", dir, "--follow-links", "--style", "records")
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stdout, `creds = load_csv("creds.csv")`)
	assert.Contains(t, got.stderr, "ctxcode: --follow-links: took "+link+", a link to "+secret+", outside the data folder")
	assert.NotContains(t, got.stderr, "skipped "+link)

	got = runCLI(t, "", "exec", "--sandbox", "local", "--data", dir, "--follow-links", "--", "open('data/creds.csv').read()")
	require.Equal(t, exitOK, got.code, got.stderr)
	assert.Contains(t, got.stdout, datatest.SecretToken)

	tasks, prefix := benchFiles(t)
	srv := llmtest.NewServer(t, llmtest.Text("ANSWER(2)", 500, 5))
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"bench", "--sandbox", "local", "--model", "m", "--base-url", srv.URL, "--tasks", tasks,
		"--data", dir, "--prefix", prefix, "--conditions", "D", "--out", out}
	if os.Geteuid() != 0 {
		args = append(args, "--unsafe-local") // the kernels run as the user, who can read the run
	}
	got = runCLI(t, "", append(args, "--follow-links")...)
	require.Equal(t, exitOK, got.code, got.stderr)
	var spec struct {
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, bench.SpecFile))), &spec))
	assert.Equal(t, true, spec.Data["follow_links"], "run.json says the kernels saw the links out of the folder")
	assert.Contains(t, string(srv.Requests()[0].Raw), datatest.SecretToken, "the prefix printed the file the user chose to show")

	got = runCLI(t, "", args...)
	assert.Equal(t, exitUsage, got.code, got.stderr)
	assert.Contains(t, got.stderr, "data follow_links (--follow-links): true in the run, false now")
}

// TestSpecialFilesNeverOpened: a named pipe (datatest.Pipe fails the test
// if anything opens it), a socket and links to devices, /dev/zero among
// them, are skipped with a warning by prefix init, ask and exec, in each
// sandbox; nothing hangs and nothing reads forever.
func TestSpecialFilesNeverOpened(t *testing.T) {
	privateCache(t)
	t.Setenv("OPENAI_API_KEY", "sk-x")
	dir, _ := datatest.Folder(t)
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero.csv")))
	skipped := func(t *testing.T, stderr string) {
		t.Helper()
		for name, why := range map[string]string{
			"pipe.csv": "a named pipe (FIFO): never opened",
			"sock":     "a socket: never opened",
			"null.csv": "a link to /dev/null, a device: never opened",
			"zero.csv": "a link to /dev/zero, a device: never opened",
		} {
			assert.Contains(t, stderr, "ctxcode: warning: skipped "+filepath.Join(dir, name)+": "+why, name)
		}
	}

	got := runCLI(t, "", "prefix", "init", "--data", dir, "--style", "records")
	require.Equal(t, exitOK, got.code, got.stderr)
	skipped(t, got.stderr)
	for _, name := range []string{"pipe", "sock", "null", "zero"} {
		assert.NotContains(t, got.stdout, name)
	}
	for _, sb := range sandboxes(t) {
		t.Run(sb, func(t *testing.T) {
			needSandbox(t, sb)
			srv := llmtest.NewServer(t, llmtest.Text("ANSWER(len(sales))", 500, 5))
			got := runCLI(t, "", "ask", "--sandbox", sb, "--model", "m", "--base-url", srv.URL, "--data", dir, "How many sales rows are there?")
			require.Equal(t, exitOK, got.code, got.stderr)
			assert.True(t, strings.HasPrefix(got.stdout, "2\n"), got.stdout)
			skipped(t, got.stderr)

			got = runCLI(t, "", "exec", "--sandbox", sb, "--data", dir, "--", "import os; sorted(os.listdir('data'))")
			require.Equal(t, exitOK, got.code, got.stderr)
			assert.Contains(t, got.stdout, "['alias.csv', 'sales.csv']", "the kernel's data/ holds no pipe, socket or device")
			skipped(t, got.stderr)
		})
	}
}

// benchFiles writes a tasks file with one task about datatest.Folder's
// sales and a prefix that prints every file of data/ (as a prefix someone
// wrote to look at their data would).
func benchFiles(t *testing.T) (tasks, prefix string) {
	t.Helper()
	d := t.TempDir()
	tasks = filepath.Join(d, "tasks.jsonl")
	require.NoError(t, os.WriteFile(tasks, []byte(`{"id": "rows", "question": "How many sales rows are there?", "answer_type": "integer", "gold": 2}`+"\n"), 0o644))
	prefix = filepath.Join(d, "show.py")
	require.NoError(t, os.WriteFile(prefix, []byte(`# name: show
# language: python
# description: Prints every file of data/.
# rules: sales is the rows of data/sales.csv, a list of dicts.
# %%
import csv, os
for name in sorted(os.listdir('data')):
    print(name, open(os.path.join('data', name)).read())
# %%
with open('data/sales.csv', newline='') as f:
    sales = list(csv.DictReader(f))
len(sales)
`), 0o644))
	return tasks, prefix
}

// assertNothingLeaked greps every request srv received and the trajectory
// at traj for the secret (and, with name, the link's name).
func assertNothingLeaked(t *testing.T, srv *llmtest.Server, traj string, name bool) {
	t.Helper()
	assertRequestsClean(t, srv, name)
	assertNoSecret(t, traj, readFile(t, traj))
}

// assertRequestsClean greps every request srv received for the secret
// (and, with name, the link's name: no kernel sees it, so no model is told
// of it).
func assertRequestsClean(t *testing.T, srv *llmtest.Server, name bool) {
	t.Helper()
	reqs := srv.Requests()
	require.NotEmpty(t, reqs)
	for i, r := range reqs {
		assertNoSecret(t, fmt.Sprintf("request %d", i+1), string(r.Raw))
		if name {
			assert.NotContains(t, string(r.Raw), "creds", "request %d names the link no kernel sees", i+1)
		}
	}
}

func assertNoSecret(t *testing.T, where, text string) {
	t.Helper()
	assert.NotContains(t, text, datatest.SecretToken, "%s holds the private file's content", where)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}
