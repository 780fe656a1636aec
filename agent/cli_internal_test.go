package agent

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
)

// readDir is a data folder with one file of each kind read must handle.
func readDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	var ten strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&ten, "line %d\n", i)
	}
	write("ten.txt", ten.String())
	write("crlf.csv", "a,b\r\n1,2\r\n")
	write("nonl.txt", "one\ntwo")
	write("empty.txt", "")
	write("blob.bin", "PK\x03\x04\x00\x00binary")
	write("latin1.csv", "name\ncaf\xe9\n")
	write("sub/inner.jsonl", `{"a":1}`+"\n")
	outside := filepath.Join(t.TempDir(), "secret.txt")
	require.NoError(t, os.WriteFile(outside, []byte("the host's secret\n"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "escape.txt")))
	require.NoError(t, os.Symlink(filepath.Dir(outside), filepath.Join(dir, "escdir")))
	require.NoError(t, os.Symlink("ten.txt", filepath.Join(dir, "alias.txt")))
	require.NoError(t, os.Symlink("sub", filepath.Join(dir, "subdir")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
	return dir
}

// TestServeRead: numbered lines as cat -n writes them, offset and limit in
// lines, and a one-line note that says what to do for every path read does
// not serve. Nothing outside the data folder is ever shown.
func TestServeRead(t *testing.T) {
	dir := readDir(t)
	tests := []struct {
		name   string
		args   readArgs
		out    string
		note   string // the one note before the output, when there is one
		after  string // the one note after it, when there is one
		noLeak bool
	}{
		{name: "whole file", args: readArgs{Path: "data/ten.txt"},
			out: "     1\tline 1\n     2\tline 2\n     3\tline 3\n     4\tline 4\n     5\tline 5\n" +
				"     6\tline 6\n     7\tline 7\n     8\tline 8\n     9\tline 9\n    10\tline 10\n"},
		{name: "offset and limit", args: readArgs{Path: "data/ten.txt", Offset: 3, Limit: 2},
			out: "     3\tline 3\n     4\tline 4\n", after: "lines 3-4 of 10; read on with offset 5"},
		{name: "to the end", args: readArgs{Path: "data/ten.txt", Offset: 9, Limit: 5},
			out: "     9\tline 9\n    10\tline 10\n", after: "lines 9-10 of 10: the end of data/ten.txt"},
		{name: "past the end", args: readArgs{Path: "data/ten.txt", Offset: 11},
			note: "data/ten.txt has 10 lines; offset 11 is past its end"},
		{name: "the container's absolute path", args: readArgs{Path: "/session/data/ten.txt", Limit: 1},
			out: "     1\tline 1\n", after: "lines 1-1 of 10; read on with offset 2"},
		{name: "dot and dot-dot inside", args: readArgs{Path: "./data/sub/../ten.txt", Limit: 1},
			out: "     1\tline 1\n", after: "lines 1-1 of 10; read on with offset 2"},
		{name: "a link inside", args: readArgs{Path: "data/alias.txt", Limit: 1},
			out: "     1\tline 1\n", after: "lines 1-1 of 10; read on with offset 2"},
		{name: "CRLF", args: readArgs{Path: "data/crlf.csv"}, out: "     1\ta,b\n     2\t1,2\n"},
		{name: "no final newline", args: readArgs{Path: "data/nonl.txt"}, out: "     1\tone\n     2\ttwo"},
		{name: "not UTF-8", args: readArgs{Path: "data/latin1.csv"}, out: "     1\tname\n     2\tcaf\uFFFD\n",
			note: "data/latin1.csv is not valid UTF-8: the bytes that are not are shown as \uFFFD"},
		{name: "empty", args: readArgs{Path: "data/empty.txt"}, note: "data/empty.txt is empty (0 bytes)"},
		{name: "binary", args: readArgs{Path: "data/blob.bin"},
			note: "data/blob.bin is a binary file (12 bytes), not text: read shows text files; look into it with bash, such as od -c data/blob.bin | head"},
		{name: "the data folder", args: readArgs{Path: "data/"},
			note: "data/ is a folder, not a file: it holds alias.txt, blob.bin, crlf.csv, empty.txt, latin1.csv, nonl.txt, sub/, ten.txt; " +
				"read one of its files, or list it with bash: ls -l data"},
		{name: "a folder inside", args: readArgs{Path: "data/sub"},
			note: "data/sub/ is a folder, not a file: it holds inner.jsonl; read one of its files, or list it with bash: ls -l data/sub"},
		{name: "the session folder", args: readArgs{Path: "."}},
		{name: "a pipe", args: readArgs{Path: "data/pipe"}, note: "there is no file data/pipe: data/ holds alias.txt"},
		{name: "missing", args: readArgs{Path: "data/nope.jsonl"}, note: "there is no file data/nope.jsonl: data/ holds alias.txt"},
		{name: "without data/", args: readArgs{Path: "ten.txt"},
			note: "there is no file ten.txt that read serves: read serves the files under data/; did you mean data/ten.txt?"},
		{name: "elsewhere in the session folder", args: readArgs{Path: "notes.txt"},
			note: "there is no file notes.txt that read serves: read serves the files under data/; for a file you wrote under /tmp, use bash, such as cat -n /tmp/FILE"},
		{name: "dot-dot", args: readArgs{Path: "data/../../etc/passwd"}, noLeak: true,
			note: "data/../../etc/passwd is outside the session folder: read serves only the files under data/"},
		{name: "absolute", args: readArgs{Path: "/etc/passwd"}, noLeak: true,
			note: "/etc/passwd is outside the session folder: read serves the files under data/, such as data/tasks.jsonl; for a file you wrote under /tmp, use bash, such as cat -n /tmp/FILE"},
		{name: "a link that leads out", args: readArgs{Path: "data/escape.txt"}, noLeak: true,
			note: "there is no file data/escape.txt: data/ holds alias.txt"},
		{name: "through a folder link that leads out", args: readArgs{Path: "data/escdir/secret.txt"}, noLeak: true,
			note: "there is no file data/escdir/secret.txt: data/ holds alias.txt"},
		{name: "through a folder link inside", args: readArgs{Path: "data/subdir/inner.jsonl"},
			note: "there is no file data/subdir/inner.jsonl: data/ holds alias.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, notes, after := serveRead(dataFolder{dir: dir}, tt.args)
			assert.Equal(t, tt.out, out)
			switch {
			case tt.name == "the session folder":
				require.Len(t, notes, 1)
				assert.True(t, strings.HasPrefix(notes[0], "the session folder is a folder, not a file: the data are in data/ (alias.txt, blob.bin"), notes[0])
			case tt.note == "":
				assert.Empty(t, notes)
			case strings.HasSuffix(tt.note, "holds alias.txt"):
				require.Len(t, notes, 1)
				assert.True(t, strings.HasPrefix(notes[0], tt.note), notes[0])
			default:
				assert.Equal(t, []string{tt.note}, notes)
			}
			if tt.after == "" {
				assert.Empty(t, after)
			} else {
				assert.Equal(t, []string{tt.after}, after)
			}
			for _, n := range notes {
				assert.NotContains(t, n, "\n", "a note is one line")
				assert.NotContains(t, n, dir, "the host path never reaches the model")
			}
			if tt.noLeak {
				assert.NotContains(t, out+strings.Join(notes, ""), "the host's secret")
				assert.NotContains(t, out+strings.Join(notes, ""), "root:")
			}
		})
	}
}

// TestServeReadAgreesWithTheCopy: read serves a path of data/ exactly
// when the kernel's copy holds it (kernel.WalkReadOnly), with and without
// --follow-links: what bash's cat shows, read shows, and nothing else.
func TestServeReadAgreesWithTheCopy(t *testing.T) {
	dir := readDir(t)
	var paths []string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if rel, _ := filepath.Rel(dir, p); rel != "." {
			paths = append(paths, filepath.ToSlash(rel))
		}
		return nil
	}))
	paths = append(paths, "subdir/inner.jsonl", "escdir/secret.txt")
	for _, follow := range []bool{false, true} {
		files, dirs := map[string]bool{}, map[string]bool{}
		require.NoError(t, kernel.WalkReadOnly(dir, kernel.WalkOptions{FollowLinks: follow}, func(e kernel.DataEntry) error {
			if e.Dir {
				dirs[e.Rel] = true
			} else {
				files[e.Rel] = true
			}
			return nil
		}))
		assert.Equal(t, follow, files["escape.txt"], "a link out of the folder is in the copy only with --follow-links")
		for _, p := range paths {
			out, notes, _ := serveRead(dataFolder{dir: dir, follow: follow}, readArgs{Path: "data/" + p})
			note := strings.Join(notes, " ")
			served := out != "" || strings.Contains(note, "is empty (0 bytes)") || strings.Contains(note, "is a binary file")
			assert.Equal(t, files[p], served, "follow=%v: data/%s: %q %q", follow, p, out, note)
			assert.Equal(t, dirs[p], strings.Contains(note, "is a folder, not a file"), "follow=%v: data/%s: %q", follow, p, note)
			if !files[p] && !dirs[p] {
				assert.Contains(t, note, "there is no file data/"+p, "follow=%v", follow)
			}
		}
		out, _, _ := serveRead(dataFolder{dir: dir, follow: follow}, readArgs{Path: "data/escape.txt"})
		assert.Equal(t, follow, strings.Contains(out, "the host's secret"))
	}
}

// TestServeReadBoundsWhatItCollects: a read of a huge range keeps the head
// and the tail of it, by the kernel's cut rule, and says how much went.
func TestServeReadBoundsWhatItCollects(t *testing.T) {
	dir := t.TempDir()
	line := strings.Repeat("x", 99) + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat(line, 30_000)), 0o644))
	out, notes, after := serveRead(dataFolder{dir: dir}, readArgs{Path: "data/big.txt", Limit: 1_000_000})
	assert.Empty(t, notes)
	assert.Empty(t, after, "the whole file was asked for")
	assert.LessOrEqual(t, len(out), readMaxBytes+100)
	assert.True(t, strings.HasPrefix(out, "     1\txxx"), out[:20])
	assert.True(t, strings.HasSuffix(out, " 30000\t"+line), out[len(out)-120:])
	dropped := kernel.DroppedIn(out)
	assert.Positive(t, dropped)
	assert.EqualValues(t, 30_000*(7+100)-len(out)+len(kernel.DroppedLine(dropped))+1, dropped, "every byte is kept or counted")
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l != kernel.DroppedLine(dropped) {
			assert.Regexp(t, `^ *\d+\tx{99}$`, l, "whole lines only")
		}
	}
}

func TestToolArguments(t *testing.T) {
	t.Run("read", func(t *testing.T) {
		tests := []struct {
			raw  string
			want readArgs
			why  string
		}{
			{`{"path":"data/a"}`, readArgs{Path: "data/a"}, ""},
			{`{"path":"data/a","offset":5,"limit":10}`, readArgs{Path: "data/a", Offset: 5, Limit: 10}, ""},
			{`{"path":"data/a","offset":"5","limit":null}`, readArgs{Path: "data/a", Offset: 5}, ""},
			{`{"path":"data/a","limit":2.0}`, readArgs{Path: "data/a", Limit: 2}, ""},
			{`{"path":"data/a","offset":0}`, readArgs{}, "offset must be a whole number of lines, 1 or more (got 0)"},
			{`{"path":"data/a","limit":1.5}`, readArgs{}, "limit must be a whole number of lines, 1 or more (got 1.5)"},
			{`{"path":"data/a","limit":"ten"}`, readArgs{}, `limit must be a whole number of lines, 1 or more (got "ten")`},
			{`{"path":3}`, readArgs{}, readUsage + ": path must be a string"},
			{`{"path":" "}`, readArgs{}, "the path is empty: give a file's path, such as data/tasks.jsonl"},
			{`{"file":"data/a"}`, readArgs{}, readUsage + `: no argument "file"`},
			{`{}`, readArgs{}, readUsage + ": path is missing"},
			{`["data/a"]`, readArgs{}, readUsage},
			{`{"path": "data/`, readArgs{}, readUsage},
			{`null`, readArgs{}, readUsage},
		}
		for _, tt := range tests {
			got, why := readArguments(tt.raw)
			assert.Equal(t, tt.why, why, tt.raw)
			if tt.why == "" {
				assert.Equal(t, tt.want, got, tt.raw)
			}
		}
	})
	t.Run("bash", func(t *testing.T) {
		tests := []struct{ raw, want, why string }{
			{`{"command":"ls data"}`, "ls data", ""},
			{`{"cmd":"ls data"}`, "", bashUsage + `: no argument "cmd"`},
			{`{"command":["ls","data"]}`, "", bashUsage + ": command must be a string"},
			{`{"command":""}`, "", "the command is empty: send the command line to run"},
			{`ls data`, "", bashUsage},
		}
		for _, tt := range tests {
			got, why := bashArguments(tt.raw)
			assert.Equal(t, tt.why, why, tt.raw)
			assert.Equal(t, tt.want, got, tt.raw)
		}
	})
}

func TestStatedAnswer(t *testing.T) {
	tests := []struct {
		msg, want string
		ok        bool
	}{
		{"ANSWER: 42", "42", true},
		{"There are 42 of them.\n\nANSWER: 42", "42", true},
		{"**ANSWER:** 42", "42", true},
		{"**ANSWER**: `42`", "42", true},
		{"ANSWER: **Granite**", "Granite", true},
		{`ANSWER: ["K00012", "K00034"]`, `["K00012", "K00034"]`, true},
		{"First guess ANSWER: 1 is wrong.\nANSWER: 2\n", "2", true},
		{"ANSWER: 1\nThen again:\nANSWER: 3", "3", true},
		{"ANSWER:\n```json\n[\"a\", \"b\"]\n```", `["a", "b"]`, true},
		{"  ANSWER :  \"Open Quarry\"  ", `"Open Quarry"`, true},
		{"ANSWER:", "", false},
		{"I could not find the answer.", "", false},
		{"I will call ANSWER(42) now.", "", false},
		{"The answer is ANSWER: 7", "7", true},
		{"ANSWER: [\"a\",\n \"b\"]\n", "[\"a\",\n \"b\"]", true},
		{"ANSWER: {\"north\": 15,\n  \"south\": 32}", "{\"north\": 15,\n  \"south\": 32}", true},
		{"", "", false},
	}
	for _, tt := range tests {
		got, ok := statedAnswer(tt.msg)
		assert.Equal(t, tt.ok, ok, "%q", tt.msg)
		assert.Equal(t, tt.want, got, "%q", tt.msg)
	}
}
