package kernel

import "syscall"

// goDup2 makes newfd a copy of oldfd (Linux has dup3 on every architecture).
func goDup2(oldfd, newfd int) error { return syscall.Dup3(oldfd, newfd, 0) }
