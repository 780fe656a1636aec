package kernel

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostPID finds the process whose /proc/PID/cmdline is cmdline, as this
// host sees it. The caller knows it runs (it was started and exec'd
// before): hostPID looks again while the scan misses it, as a read of
// /proc/PID/cmdline can come back empty on a loaded host, and fails after
// 10 s naming the processes that run the same program, so that a miss says
// what was there instead.
func hostPID(t *testing.T, cmdline string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pid, ok := scanCmdline(cmdline); ok {
			return pid
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	prog, _, _ := strings.Cut(cmdline, "\x00")
	var seen []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && strings.HasPrefix(string(b), prog+"\x00") {
			st, _ := os.ReadFile(filepath.Join(d, "stat"))
			seen = append(seen, filepath.Base(d)+": "+strings.ReplaceAll(string(b), "\x00", " ")+" ("+strings.TrimSpace(string(st))+")")
		}
	}
	t.Fatalf("no process runs %q; processes of %s: %q", strings.ReplaceAll(cmdline, "\x00", " "), prog, seen)
	return 0
}

// scanCmdline is the pid of a process whose cmdline is cmdline.
func scanCmdline(cmdline string) (int, bool) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, false
	}
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "cmdline")); err == nil && string(b) == cmdline {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid, true
		}
	}
	return 0, false
}
