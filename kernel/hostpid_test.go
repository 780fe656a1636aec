package kernel

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hostPID finds the process whose /proc/PID/cmdline is cmdline, as this
// host sees it.
func hostPID(t *testing.T, cmdline string) int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "cmdline")); err == nil && string(b) == cmdline {
			pid, _ := strconv.Atoi(filepath.Base(d))
			return pid
		}
	}
	t.Fatalf("no process runs %q", strings.ReplaceAll(cmdline, "\x00", " "))
	return 0
}
