//go:build !linux

package kernel

import (
	"fmt"
	"os"
	"os/exec"
)

// Confinement says how local kernels are kept from the processes around
// them. Off Linux they are not: they run as ctxcode's user, without
// namespaces.
type Confinement struct {
	UID, GID   int    // the host ids the kernel runs as
	Namespaces bool   // always false off Linux
	Why        string // why not
}

func (c Confinement) String() string { return "as ctxcode's user, without namespaces (" + c.Why + ")" }

// Warning is what a person should be told before cells run in such a kernel.
func (c Confinement) Warning() string {
	return "the cells can read the environment of your other processes (" + c.Why +
		"); use --sandbox docker to keep keys out of their reach"
}

// Confinement is how this transport's kernels are confined.
func (l *Local) Confinement() Confinement { return LocalConfinement(l.cfg.NoNamespaces) }

// LocalConfinement is how local kernels started by this process are
// confined: as its user, without namespaces.
func LocalConfinement(bool) Confinement {
	return Confinement{UID: os.Geteuid(), GID: os.Getegid(), Why: "local kernels are confined on Linux only"}
}

// Leaks says what of a graded run the kernels confined as c can read: off
// Linux they run as you, and can read every file you can.
func Leaks(euid int, c Confinement, secrets ...string) []string {
	return []string{fmt.Sprintf("local kernels run as your user (uid %d), so a cell can read every file you can: "+
		"the run directory (other trials' answers) and the task file (the golds) among them", euid)}
}

func (l *Local) confine(*exec.Cmd, Confinement, string, bool) error { return nil }
