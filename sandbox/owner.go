package sandbox

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// An owner is the ctxcode process that made a container or a volume, as
// the labels record it. A pid alone names a process only within one PID
// namespace of one boot of one kernel, and a hostname does not name a
// kernel at all (sibling containers, cloned machines and CI runners share
// hostnames), so the labels record everything a judge needs to know
// whether it can look the owner up:
//
//	ctxcode.owner      a random id drawn once per process
//	ctxcode.host       the hostname
//	ctxcode.boot       the kernel's boot id (/proc/sys/kernel/random/boot_id)
//	ctxcode.pidns      the PID namespace's inode (/proc/self/ns/pid)
//	ctxcode.pid        the pid, in that namespace
//	ctxcode.pid_start  the process's start time, in clock ticks since boot
//
// Where the system cannot tell (no /proc), a label is left out, and a
// container without it is judged by its age alone.
type owner struct {
	ID    string
	Host  string
	Boot  string
	PIDNS string
	PID   int
	Start string
}

// self is this process as an owner, computed once.
var self = sync.OnceValue(func() owner {
	host, _ := os.Hostname()
	return owner{
		ID:    NewSessionID() + NewSessionID(),
		Host:  host,
		Boot:  bootID(),
		PIDNS: pidNamespace(),
		PID:   os.Getpid(),
		Start: processStart(os.Getpid()),
	}
})

// labels are o as container labels; empty values are left out.
func (o owner) labels() map[string]string {
	l := map[string]string{}
	for k, v := range map[string]string{
		LabelOwner: o.ID, LabelHost: o.Host, LabelBoot: o.Boot, LabelPIDNS: o.PIDNS, LabelPIDStart: o.Start,
	} {
		if v != "" {
			l[k] = v
		}
	}
	if o.PID > 0 {
		l[LabelPID] = strconv.Itoa(o.PID)
	}
	return l
}

// ownerOf reads the owner labels.
func ownerOf(labels map[string]string) owner {
	pid, _ := strconv.Atoi(labels[LabelPID])
	return owner{
		ID:    labels[LabelOwner],
		Host:  labels[LabelHost],
		Boot:  labels[LabelBoot],
		PIDNS: labels[LabelPIDNS],
		PID:   pid,
		Start: labels[LabelPIDStart],
	}
}

// sameProcessTable reports whether the pid of o can be looked up by me: o
// was made on the same boot of the same kernel, in the same PID namespace.
// A namespace's inode is unique among the namespaces alive on one boot; if
// o's namespace has ended and its inode was reused for me's, every process
// of o's is gone anyway, so looking its pid up here can only keep an
// orphan, never remove a live container.
func sameProcessTable(me, o owner) bool {
	return me.Boot != "" && me.PIDNS != "" && o.Boot == me.Boot && o.PIDNS == me.PIDNS
}

// bootID is the kernel's boot id, fresh at every boot and shared by every
// container on that kernel, or "" where /proc cannot tell.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// pidNamespace is the inode of this process's PID namespace, or "".
func pidNamespace() string {
	link, err := os.Readlink("/proc/self/ns/pid") // "pid:[4026531836]"
	if err != nil {
		return ""
	}
	ino, ok := strings.CutPrefix(link, "pid:[")
	ino, ok2 := strings.CutSuffix(ino, "]")
	if !ok || !ok2 {
		return ""
	}
	return ino
}

// bootTime is when this kernel booted (btime in /proc/stat), or the zero
// time where /proc cannot tell.
var bootTime = sync.OnceValue(func() time.Time {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			if sec, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(sec, 0)
			}
		}
	}
	return time.Time{}
})

// exists reports whether a process with this pid runs in this PID namespace.
func exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// processStart is a process's start time in clock ticks since boot (field
// 22 of /proc/PID/stat), or "" where /proc cannot tell.
func processStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}
