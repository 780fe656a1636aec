package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary stand in for the ctxcode binary when exec
// starts a Go kernel (`<self> kernel serve --lang go`).
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "kernel" && os.Args[2] == "serve" {
		os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func requirePython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("CTXCODE_REQUIRE_DOCKER") == "1" {
			t.Fatal("python3 is missing")
		}
		t.Skip("python3 is missing")
	}
}

type outcome struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, stdin string, args ...string) outcome {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return outcome{code, out.String(), errb.String()}
}

func TestExecPython(t *testing.T) {
	requirePython(t)
	got := runCLI(t, "", "exec", "--", "x = 41", "x + 1")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Equal(t, "In [1]: x = 41\n\nIn [2]: x + 1\nOut[2]: 42\n", got.stdout)
}

func TestExecGo(t *testing.T) {
	got := runCLI(t, "", "exec", "--lang", "go", "--", "x := 41", "x + 1")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Equal(t, "In [1]: x := 41\n\nIn [2]: x + 1\nOut[2]: 42\n", got.stdout)
}

func TestExecCellsFromStdin(t *testing.T) {
	requirePython(t)
	cells := "# a header, not a cell\n\n# %%\nimport os\nsorted(os.listdir('data'))\n# %%\nprint('hi')\n1/0\n# %% second\nANSWER(len(os.listdir('data')))\n"
	got := runCLI(t, cells, "exec", "--data", "../../testdata/demo", "--json")
	require.Equal(t, 0, got.code, got.stderr)
	lines := strings.Split(strings.TrimSpace(got.stdout), "\n")
	require.Len(t, lines, 3)
	var recs []execRecord
	for _, l := range lines {
		var r execRecord
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		recs = append(recs, r)
	}
	assert.Equal(t, "['tasks.jsonl', 'teams.jsonl', 'users.jsonl']", recs[0].Value)
	assert.Equal(t, "print('hi')\n1/0", recs[1].Code)
	assert.Equal(t, "hi\n", recs[1].Stdout)
	assert.Equal(t, "ZeroDivisionError", recs[1].Error.Name, "a failed cell does not stop the session")
	assert.JSONEq(t, "3", string(recs[2].Answer))
}

func TestExecText(t *testing.T) {
	requirePython(t)
	got := runCLI(t, "", "exec", "--", "for i in range(2):\n    print(i)", "undefined", "ANSWER({'a': 1})")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Equal(t, "In [1]: for i in range(2):\n   ...:     print(i)\n0\n1\n\n"+
		"In [2]: undefined\nCell In[2], line 1\n    undefined\nNameError: name 'undefined' is not defined\n\n"+
		"In [3]: ANSWER({'a': 1})\nANSWER: {\"a\": 1}\n", got.stdout)
}

func TestExecHardDeadline(t *testing.T) {
	requirePython(t)
	code := "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True: pass"
	got := runCLI(t, "", "exec", "--timeout", "300ms", "--", "1", code, "2")
	assert.Equal(t, exitInfra, got.code)
	assert.Equal(t, "In [1]: 1\nOut[1]: 1\n\nIn [2]: import signal\n   ...: signal.signal(signal.SIGALRM, signal.SIG_IGN)\n   ...: while True: pass\n", got.stdout)
	assert.Contains(t, got.stderr, "cell 2 of 3 (1 later cell(s) not run)")
	assert.Contains(t, got.stderr, "was killed")
}

func TestExecUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no cells", []string{"exec"}, "no cells given"},
		{"unknown language", []string{"exec", "--lang", "ruby", "--", "1"}, `unknown language "ruby": expected python or go`},
		{"docker not yet", []string{"exec", "--sandbox", "docker", "--", "1"}, "--sandbox docker is not available yet"},
		{"unknown sandbox", []string{"exec", "--sandbox", "vm", "--", "1"}, `--sandbox "vm": expected docker or local`},
		{"prefix not yet", []string{"exec", "--prefix", "p.py", "--", "1"}, "--prefix is not available yet"},
		{"missing data", []string{"exec", "--data", "/no/such/dir", "--", "1"}, "not a folder"},
		{"bad timeout", []string{"exec", "--timeout", "0s", "--", "1"}, "--timeout must be positive"},
		{"unknown flag", []string{"exec", "--frobnicate"}, "flag provided but not defined: -frobnicate"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"flag after cells", []string{"exec", "--", "1", "--timeout", "1s"}, "flag --timeout comes after the cells"},
		{"kernel serve python", []string{"kernel", "serve", "--lang", "python"}, "not served by ctxcode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, "", tt.args...)
			assert.Equal(t, exitUsage, got.code)
			assert.Contains(t, got.stderr, tt.want)
			assert.NotContains(t, got.stderr, "Flags:", "an error is one message, not the whole help")
			assert.Empty(t, got.stdout)
		})
	}
}

func TestExecPythonMissing(t *testing.T) {
	got := runCLI(t, "", "exec", "--python", "/no/such/python3", "--", "1")
	assert.Equal(t, exitInfra, got.code)
	assert.Contains(t, got.stderr, "apt-get install python3")
}

func TestHelpAndVersion(t *testing.T) {
	got := runCLI(t, "", "help")
	assert.Equal(t, 0, got.code)
	assert.Contains(t, got.stdout, "exec")
	got = runCLI(t, "", "exec", "-h")
	assert.Equal(t, 0, got.code)
	assert.Contains(t, got.stderr, "ctxcode exec --lang go -- 'x := 41' 'x + 1'")
	got = runCLI(t, "", "version")
	assert.Equal(t, 0, got.code)
	assert.Contains(t, got.stdout, "ctxcode ")
	got = runCLI(t, "")
	assert.Equal(t, exitUsage, got.code)
}
