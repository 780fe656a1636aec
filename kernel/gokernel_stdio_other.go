//go:build !linux && !darwin

package kernel

import (
	"context"
	"fmt"
	"runtime"
)

// ServeGoStdio serves the protocol on the process's own stdin/stdout. It
// needs to re-point file descriptors, which ctxcode does on Linux and macOS
// only; elsewhere it fails at once (ServeGo still works over any reader and
// writer).
func ServeGoStdio(ctx context.Context) error {
	return fmt.Errorf("the Go kernel cannot serve on stdin/stdout on %s: supported on linux and darwin", runtime.GOOS)
}
