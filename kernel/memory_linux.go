//go:build linux

package kernel

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// hostMemory is the memory a process of ctxcode's may use, in bytes: the
// host's, or less when ctxcode runs under a cgroup (v2) memory limit, as
// in a container or a systemd unit; 0 when unknown.
func hostMemory() int64 {
	var info unix.Sysinfo_t
	if unix.Sysinfo(&info) != nil {
		return 0
	}
	total := int64(info.Totalram) * int64(info.Unit)
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return total
	}
	for _, line := range strings.Split(string(b), "\n") {
		path, ok := strings.CutPrefix(line, "0::")
		if !ok {
			continue
		}
		limit, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", path, "memory.max"))
		if err != nil {
			break
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(limit)), 10, 64); err == nil && n > 0 && n < total {
			return n
		}
	}
	return total
}
