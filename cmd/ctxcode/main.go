// Command ctxcode answers questions about data with an LLM working inside a
// live notebook session. See the README and `ctxcode help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signalContext()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalContext is cancelled by Ctrl-C (SIGINT) or SIGTERM, so that run
// closes kernels and keeps what finished. A closed stdout (ctxcode exec
// ... | head -1) becomes a write error to return from, with kernels closed
// and folders removed, instead of a SIGPIPE that kills the process where
// it stands.
func signalContext() (context.Context, context.CancelFunc) {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
