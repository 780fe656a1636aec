package bench

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadTasksData: a task's "data" is resolved against the task file's
// folder to a clean absolute path; one that is empty, not a string, not
// there or a file is a problem of its line.
func TestReadTasksData(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tables", "t1"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tables", "f.csv"), []byte("a\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tasks"), 0o755))
	file := filepath.Join(dir, "tasks", "tasks.jsonl")
	line := func(id, data string) string {
		return `{"id": "` + id + `", "question": "q", "answer_type": "integer", "gold": 1` + data + "}\n"
	}
	require.NoError(t, os.WriteFile(file, []byte(
		line("rel", `, "data": "../tables/t1/"`)+
			line("abs", `, "data": "`+filepath.Join(dir, "tables", "t1")+`"`)+
			line("none", "")+
			line("empty", `, "data": " "`)+
			line("number", `, "data": 7`)+
			line("missing", `, "data": "../tables/t2"`)+
			line("file", `, "data": "../tables/f.csv"`)), 0o644))
	tasks, err := ReadTasks(file)
	var tfe *TaskFileError
	require.ErrorAs(t, err, &tfe)
	require.Len(t, tasks, 3)
	want := filepath.Join(dir, "tables", "t1")
	assert.Equal(t, want, tasks[0].Data)
	assert.Equal(t, want, tasks[1].Data)
	assert.Equal(t, "", tasks[2].Data)
	lines := map[int]string{}
	for _, p := range tfe.Problems {
		lines[p.Line] = p.Msg
	}
	assert.Contains(t, lines[4], "data is empty")
	assert.Contains(t, lines[5], "field data is a number, not a string")
	assert.Contains(t, lines[6], `data "../tables/t2": `)
	assert.Contains(t, lines[6], "no such folder")
	assert.Contains(t, lines[7], "not a folder but a file")
}
