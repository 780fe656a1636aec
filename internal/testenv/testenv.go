// Package testenv is the one answer, for every package's tests, to "may a
// test skip when something it needs (Docker, the kernel image, python3,
// IPython, nbformat) is missing here?": yes, with the reason, except in CI,
// where a skip would hide a broken set-up and so the test fails.
//
// CI is told by CI being set (as every CI service sets it, and .ci/run
// does) or CTXCODE_REQUIRE_DOCKER=1.
//
// It imports no package of ctxcode, so that the tests of every package,
// kernel's own included, may use it.
package testenv

import (
	"os"
	"testing"
)

// Strict says whether a missing prerequisite fails the test instead of
// skipping it.
func Strict() bool {
	return os.Getenv("CI") != "" || os.Getenv("CTXCODE_REQUIRE_DOCKER") == "1"
}

// SkipOrFail skips tb with the message, or fails it in CI (see Strict).
func SkipOrFail(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if Strict() {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format, args...)
}
