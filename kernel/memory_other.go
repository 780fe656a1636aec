//go:build !linux

package kernel

// hostMemory is the memory a process of ctxcode's may use: unknown (0)
// off Linux.
func hostMemory() int64 { return 0 }
