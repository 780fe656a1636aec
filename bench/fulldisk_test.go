package bench

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/internal/testenv"
)

// TestAppendOnAFullDiskKeepsWholeLines: on a real tmpfs of two pages (one
// for run.json, one for trials.jsonl), the line that does not fit is not
// left half written: Append fails, the log holds its whole lines, and once
// there is room the next line follows them and the run reads back whole.
//
// It fails on the code before: the cut line stayed, and the line after it
// made a bad line in the middle of the log, which a resume refuses.
func TestAppendOnAFullDiskKeepsWholeLines(t *testing.T) {
	disk := testenv.Tmpfs(t, 8<<10)
	dir := filepath.Join(disk, "run")
	l, _ := openDir(t, dir, dirSpec(), Continue)
	long := func(task string) Trial {
		tr := dirTrial(dirKey(task), ClassModel, 1)
		tr.GradeReason = strings.Repeat("x", 1500) // three lines do not fit in a page
		return tr
	}
	require.NoError(t, l.Append(long("s-t1-1")))
	require.NoError(t, l.Append(long("s-t1-2")))
	err := l.Append(long("s-t2-1"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no space left on device")
	assert.Len(t, trialLines(t, dir), 2, "the line that did not fit is gone whole")
	assert.False(t, l.Done(dirKey("s-t2-1")), "its trial has no line: it runs again")

	testenv.ResizeTmpfs(t, disk, 1<<20)
	require.NoError(t, l.Append(long("s-t2-1")))
	require.NoError(t, l.Close())
	l2, err := Open(dir, dirSpec(), MustResume, io.Discard)
	require.NoError(t, err)
	defer l2.Close()
	assert.False(t, l2.Dropped)
	assert.Len(t, l2.Trials, 3)
}
