package prefixes

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGoNames(t *testing.T) {
	for _, tc := range []struct {
		file, ident, typ string
	}{
		{"tasks", "tasks", "Task"},
		{"2024-budget", "data2024Budget", "Data2024Budget"},
		{"type", "type_", "Type"},
		{"func", "func_", "Func"},
		{"len", "len_", "Len"},
		{"json", "json_", "JSON"},
		{"user_ids", "userIDs", "UserIDs"},
		{"categories", "categories", "Category"},
		{"status", "status", "Status"},
		{"class", "class", "Class"},
		{"ANSWER", "answer", "ANSWER2"},
		{"myData", "myData", "MyData"},
		{"café menu", "cafMenu", "CafMenu"},
		{"---", "data", "Record"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			assert.Equal(t, tc.ident, goIdentifier(tc.file, map[string]bool{}))
			assert.Equal(t, tc.typ, goTypeName(tc.file, map[string]bool{"ANSWER": true}))
		})
	}
	used := map[string]bool{}
	assert.Equal(t, []string{"tasks", "tasks2", "tasks3"},
		[]string{goIdentifier("tasks", used), goIdentifier("Tasks", used), goIdentifier("tasks!", used)}, "names stay unique")
}

func TestGoTagKey(t *testing.T) {
	for key, want := range map[string]bool{
		"team_id": true, "a b": true, "x-y.z": true, "": false, `odd"key`: false, `a\b`: false, "a,b": false, "a`b": false,
	} {
		assert.Equal(t, want, goTagKey(key), key)
	}
}
