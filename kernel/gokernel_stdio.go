//go:build linux || darwin

package kernel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
)

// goMaxStack bounds the Go stack of the kernel process. An interpreted call
// takes over 1 KiB of Go stack, so this still allows a recursion depth of
// about 200,000; deeper (or endless) recursion is a fatal stack overflow,
// which kills the process after about a second and 0.5 GiB instead of after
// several seconds and over 1 GiB with Go's default limit.
const goMaxStack = 256 << 20

// ServeGoStdio serves the protocol on the process's own stdin/stdout: it first moves the protocol
// onto private duplicated file descriptors (syscall.Dup), then re-points fd 1 at the cell's stdout
// capture (a pipe) and fd 0 at /dev/null, so that writes to os.Stdout, fmt.Print*, and anything
// writing to fd 1 are captured into the cell's stdout and can never corrupt the protocol.
//
// fd 2 is left as the process's stderr, on purpose. The interpreter's
// os.Stderr, log output and panic messages already go to the cell's stderr
// capture; what still writes to fd 2 is the Go runtime, whose last words
// ("fatal error: stack overflow", a panic in a goroutine the cell started)
// must reach the client's dead-kernel error rather than a pipe that dies
// with the process. Nothing written to fd 2 can reach the protocol.
//
// ServeGoStdio also lowers the process's maximum stack to goMaxStack.
func ServeGoStdio(ctx context.Context) (err error) {
	protoIn, err := goDupFile(0, "protocol-in")
	if err != nil {
		return err
	}
	defer protoIn.Close()
	protoOut, err := goDupFile(1, "protocol-out")
	if err != nil {
		return err
	}
	defer protoOut.Close()

	k, err := newGoKernel()
	if err != nil {
		return fmt.Errorf("start go kernel: %w", err)
	}
	defer func() { err = errors.Join(err, k.close()) }()
	if err := goRepoint(k.stdin, 0); err != nil {
		return fmt.Errorf("point fd 0 at %s: %w", os.DevNull, err)
	}
	if err := goRepoint(k.stdout.w, 1); err != nil {
		return fmt.Errorf("point fd 1 at the cell capture: %w", err)
	}
	debug.SetMaxStack(goMaxStack)
	return k.serve(ctx, protoIn, protoOut)
}

// goDupFile duplicates fd into a new close-on-exec descriptor.
func goDupFile(fd int, name string) (*os.File, error) {
	syscall.ForkLock.RLock()
	nfd, err := syscall.Dup(fd)
	if err == nil {
		syscall.CloseOnExec(nfd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("duplicate fd %d: %w", fd, err)
	}
	return os.NewFile(uintptr(nfd), name), nil
}

// goRepoint makes fd refer to what f refers to.
func goRepoint(f *os.File, fd int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var derr error
	if err := rc.Control(func(src uintptr) { derr = goDup2(int(src), fd) }); err != nil {
		return err
	}
	return derr
}
