package kernel

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExitString(t *testing.T) {
	tests := []struct {
		name string
		exit Exit
		want string
	}{
		{"out of memory in a container: the limit and the flag",
			Exit{Code: 137, OOMKilled: true, MemLimit: 64 << 20},
			"killed: out of memory, at its limit of 64 MiB (give it more with --memory, e.g. --memory 128m)"},
		{"a limit in GiB",
			Exit{Code: 137, OOMKilled: true, MemLimit: 2 << 30},
			"killed: out of memory, at its limit of 2 GiB (give it more with --memory, e.g. --memory 4g)"},
		{"out of memory, the limit unknown",
			Exit{Code: 137, OOMKilled: true},
			"killed: out of memory (give it more with --memory)"},
		{"SIGKILL on this host: the OOM killer's signal, the host's memory and the flags",
			Exit{Code: -1, Signal: syscall.SIGKILL, OnHost: true, MemLimit: 16 << 30},
			"died: killed by SIGKILL (signal 9): unless a cell sent it, the host ran out of memory and its out-of-memory killer " +
				"ended the kernel, which on this host may use all of its memory (16 GiB) and no more; --sandbox docker gives it " +
				"a limit of its own, --memory"},
		{"SIGKILL in a container, not out of memory",
			Exit{Code: 137, Signal: syscall.SIGKILL, MemLimit: 2 << 30},
			"died: killed by SIGKILL (signal 9: killed)"},
		{"an exit status, with stderr",
			Exit{Code: 3, StderrTail: "boom\n"},
			"died: exited with status 3; its stderr ended with:\nboom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.exit.String())
		})
	}
}
