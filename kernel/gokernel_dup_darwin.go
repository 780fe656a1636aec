package kernel

import "syscall"

// goDup2 makes newfd a copy of oldfd.
func goDup2(oldfd, newfd int) error { return syscall.Dup2(oldfd, newfd) }
