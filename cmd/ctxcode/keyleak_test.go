package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/kernel/kerneltest"
)

// nobody is the unprivileged user the test runs ctxcode as when it is root.
const nobody = kerneltest.Nobody

// TestKernelCannotReadTheAPIKey runs the real CLI the way a user does, with
// OPENAI_API_KEY in its environment and in that of the shell that started
// it, and has a cell read the environ, cmdline and mem of every ancestor (and
// environ and cmdline of every process it can see). The key must be nowhere.
func TestKernelCannotReadTheAPIKey(t *testing.T) {
	requirePython(t)
	type variant struct {
		name     string
		sandbox  string
		flags    []string
		lang     kernel.Language
		asNobody bool // run ctxcode itself as an unprivileged user (the test is root)
	}
	langs := []struct {
		name  string
		lang  kernel.Language
		flags []string
	}{
		{"python", kernel.Python, nil},
		{"python-stdlib", kernel.Python, []string{"--no-ipython"}},
		{"go", kernel.Go, []string{"--lang", "go"}},
	}
	var vs []variant
	for _, l := range langs {
		self := "as-root"
		if os.Geteuid() != 0 {
			self = "as-user"
		}
		vs = append(vs, variant{name: "local/" + self + "/" + l.name, sandbox: "local", flags: l.flags, lang: l.lang})
		if os.Geteuid() == 0 {
			vs = append(vs, variant{name: "local/as-nobody/" + l.name, sandbox: "local", flags: l.flags, lang: l.lang, asNobody: true})
		}
		vs = append(vs, variant{name: "docker/" + l.name, sandbox: "docker", flags: l.flags, lang: l.lang})
	}
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			needSandbox(t, v.sandbox)
			if v.sandbox == "local" && (v.asNobody || os.Geteuid() != 0) {
				requireUserNamespaces(t, v.asNobody)
			}
			secret := "sk-test-" + randomHex(t)
			rep := probeFromCLI(t, v.sandbox, v.flags, v.lang, secret, v.asNobody)
			t.Logf("the cell ran as uid %d, pid %d, ppid %d; %d ancestors %v; %d other processes; %d /proc files read",
				rep.UID, rep.PID, rep.PPID, len(rep.Ancestors), rep.Ancestors, rep.Visible, len(rep.Read))
			assert.Empty(t, rep.Found, "the cell read the key from these files")
			if v.sandbox == "local" && os.Geteuid() == 0 {
				assert.Equal(t, nobody, rep.UID, "a local kernel never runs as root")
			}
		})
	}
}

// requireUserNamespaces skips when this machine does not let an unprivileged
// user make a user, PID and mount namespace with its own /proc (as
// unshare(1) shows): a non-root ctxcode then cannot hide its ancestors, which
// is a documented limit, not a failure.
func requireUserNamespaces(t *testing.T, asNobody bool) {
	t.Helper()
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare(1) is missing: cannot tell whether unprivileged user namespaces work here")
	}
	cmd := exec.Command(unshare, "--user", "--map-root-user", "--pid", "--fork", "--mount", "--mount-proc", "true")
	if asNobody {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("unprivileged user namespaces do not work here (%v: %s): a local kernel of a non-root ctxcode "+
			"can then read the environment of ctxcode's ancestors (see kernel.LocalConfig)", err, bytes.TrimSpace(out))
	}
}

func randomHex(t *testing.T) string {
	b := make([]byte, 12)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

// probeFromCLI runs `sh -c 'ctxcode exec ... ; exit $?'` with the key in the
// environment of both sh and ctxcode (sh stays as an ancestor: it does not
// exec its last command), and returns what the probe cell saw.
func probeFromCLI(t *testing.T, sb string, flags []string, lang kernel.Language, secret string, asNobody bool) kerneltest.ProcReport {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	home := t.TempDir()
	if asNobody {
		home, exe = kerneltest.CopyForNobody(t, exe)
		require.NoError(t, os.Chown(home, nobody, nobody))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"-c", `"$@"; exit $?`, "sh", exe, "exec", "--sandbox", sb, "--json", "--timeout", "100s"}, flags...)
	args = append(args, "--", kerneltest.ProcProbe(lang, secret))
	cmd := exec.CommandContext(ctx, "/bin/sh", args...)
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "CTXCODE_TEST_CLI=1", "HOME="+home, "OPENAI_API_KEY="+secret)
	if asNobody {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	require.NoError(t, err, "stderr: %s", stderr.String())
	var rec execRecord
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 64<<20)
	require.True(t, sc.Scan(), "no output; stderr: %s", stderr.String())
	require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
	require.Equal(t, kernel.StatusOK, rec.Status, "the probe failed: %s %+v", rec.Stderr, rec.Error)
	rep, err := kerneltest.ParseProcReport(rec.Stdout)
	require.NoError(t, err)
	assert.NotContains(t, strings.Join(rep.Read, " "), "/proc/"+strconv.Itoa(rep.PID)+"/", "the probe skips its own files")
	return rep
}
