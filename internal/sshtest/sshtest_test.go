package sshtest

import (
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/dockertest"
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

// TestStartInNetns: a server in a network namespace of the test's own is
// reached over the namespace's link; once the link is down a new
// connection is never answered (ssh gives up at its ConnectTimeout), and
// once it is back the server answers again.
func TestStartInNetns(t *testing.T) {
	link := dockertest.MakeLink(t)
	s := StartInNetns(t, link.Netns, link.PeerAddr)
	assert.Equal(t, "ssh://"+s.User+"@"+link.PeerAddr+":22", s.URL())
	ssh := func() ([]byte, error) {
		args := append([]string{"-p", strconv.Itoa(s.Port), "-l", s.User, "-o", "ConnectTimeout=2", "-o", "ControlPath=none"}, s.SSHFlags()...)
		return exec.Command("ssh", append(args, s.Addr, "echo", "hi")...).CombinedOutput()
	}
	out, err := ssh()
	require.NoError(t, err, "%s\nsshd:\n%s", out, s.Log())
	assert.Equal(t, "hi\n", string(out))
	assert.Equal(t, 1, s.Sessions(t))

	link.Down(t)
	out, err = ssh()
	require.Error(t, err, "answered over a link that is down: %s", out)
	assert.Contains(t, string(out), "timed out")

	link.Up(t)
	out, err = ssh()
	require.NoError(t, err, "%s\nsshd:\n%s", out, s.Log())
	assert.Equal(t, "hi\n", string(out))
}
