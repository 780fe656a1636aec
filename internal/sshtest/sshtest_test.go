package sshtest

import (
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServerCountsConnections: a command over ssh is one accepted
// connection; two over a shared connection (ControlMaster) are one.
func TestServerCountsConnections(t *testing.T) {
	s := Start(t)
	require.Equal(t, 0, s.Sessions(t), "no connection yet")
	ssh := func(extra ...string) {
		t.Helper()
		args := append([]string{"-p", strconv.Itoa(s.Port), "-l", s.User}, s.SSHFlags()...)
		args = append(append(args, extra...), "127.0.0.1", "echo", "hi")
		out, err := exec.Command("ssh", args...).CombinedOutput()
		require.NoError(t, err, "%s\nsshd:\n%s", out, s.Log())
		assert.Equal(t, "hi\n", string(out))
	}
	ssh("-o", "ControlPath=none")
	assert.Equal(t, 1, s.Sessions(t))
	shared := []string{"-o", "ControlMaster=auto", "-o", "ControlPath=" + s.ControlDir() + "/%C", "-o", "ControlPersist=60"}
	ssh(shared...)
	ssh(shared...)
	assert.Equal(t, 2, s.Sessions(t), "the second shared command should reuse the master")
}
