package prefixes_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
)

// initGo writes a Go prefix for dir, and builds it in a Go kernel.
func initGo(t *testing.T, dir string) (string, []prefixes.Skipped, kernel.Kernel, []string) {
	t.Helper()
	src, skipped, err := prefixes.Init(dir, kernel.Go)
	require.NoError(t, err)
	p, err := prefixes.Parse("init.txt", src)
	require.NoError(t, err)
	require.Equal(t, kernel.Go, p.Language)
	k := startGo(t, dir)
	cells, err := prefixes.Build(context.Background(), k, p, kernel.ExecOptions{Timeout: time.Minute})
	require.NoError(t, err, string(src))
	var out []string
	for _, c := range cells {
		out = append(out, c.Result.Stdout+c.Result.Value)
	}
	return string(src), skipped, k, out
}

// TestInitGo writes a Go prefix for a mixed folder with awkward names, and
// the prefix builds.
func TestInitGo(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	write("type.jsonl", `{"id": 1, "kind": "a", "score": 1.5, "note": null}`+"\n"+
		`{"id": 2, "kind": "b", "score": 2, "note": "hi", "tags": ["x"]}`+"\n\n"+
		`{"id": 3, "kind": "a", "score": 3, "meta": {"k": 1}}`+"\n"+
		`{"id": 4, "kind": "a", "odd": 1}`+"\n"+
		`{"id": 5, "kind": "b", "score": 5.25, "odd": "x"}`+"\n")
	write("2024-budget.csv", "team,amount,2024 total,team\nT01,10,5,x\nT02,20,6,y\nT03,\"30,5\",7,z\n")
	write("config.json", `{"version": 3, "name": "cfg"}`)
	write("len.json", `[{"a b": 1, "odd\"key": 2}, {"a b": 3}]`)
	write("func.json", `42`)
	write("list.json", `[1, 2, 3, 4, 5]`)
	write("notes.txt", "not data")
	write("broken.jsonl", "{not json}\n")

	src, skipped, k, out := initGo(t, dir)
	assert.ElementsMatch(t, []prefixes.Skipped{
		{File: "broken.jsonl", Reason: "line 1 is not a JSON object: invalid character 'n' looking for beginning of object key string"},
		{File: "notes.txt", Reason: "not .jsonl, .json, .csv or .tsv"},
	}, skipped)
	for _, want := range []string{
		"// language: go\n",
		"// rules: The data is loaded: data2024Budget ([]Data2024Budget), config (map[string]any), func_ (any), len_ ([]map[string]any), list ([]any), type_ ([]Type).",
		`loadJSONL("type.jsonl", &type_)`, // a keyword is made a valid name
		`loadJSON("func.json", &func_)`,
		`loadJSON("len.json", &len_)`, // so is a predeclared name
		"for _, r := range loadCSV(\"2024-budget.csv\") {\n\tdata2024Budget = append(data2024Budget, Data2024Budget{Team: r[0], Amount: r[1], F2024Total: r[2], Team2: r[3]})\n}",
		"\tID    int            `json:\"id\"`\n",
		"\tScore float64        `json:\"score\"` // 0 when missing\n", // 2 and 5.25 are both numbers
		"\tNote  string         `json:\"note\"`  // \"\" when null or missing\n",
		"\tOdd   any            `json:\"odd\"`\n", // a number here, a string there
		`// The records of len.json are maps: their keys ("a b", "odd\"key") cannot all be struct fields.`,
	} {
		assert.Contains(t, src, want)
	}

	require.Len(t, out, 9, src)
	assert.Equal(t, "2024-budget.csv\nbroken.jsonl\nconfig.json\nfunc.json\nlen.json\nlist.json\nnotes.txt\ntype.jsonl\n", out[0])
	assert.Equal(t, "map[config:2 data2024Budget:3 len_:2 list:5 type_:5]", out[1])
	assert.Equal(t, "type_.Kind: [a b]\n", out[2], "a field with few values shows them")
	assert.Equal(t, "{Team:T03 Amount:30,5 F2024Total:7 Team2:z}\n", out[3])
	assert.Equal(t, "[name version]", out[4])
	assert.Equal(t, "42", out[5])
	assert.Equal(t, "map[a b:3]\n", out[6])
	assert.Equal(t, "[1 2 3]", out[7])
	assert.Equal(t, "{ID:5 Kind:b Score:5.25 Note: Tags:[] Meta:map[] Odd:x}\n", out[8])

	res, err := k.Execute(context.Background(), "type_[1].Note + data2024Budget[0].Amount + config[\"name\"].(string)", kernel.ExecOptions{})
	require.NoError(t, err)
	assert.Equal(t, `"hi10cfg"`, res.Value, "the model continues with the bound variables")
}

// TestInitGoPM writes a Go prefix for a generated dataset: it binds what
// pm-go binds, so the go-pm reference solutions run after it too.
func TestInitGoPM(t *testing.T) {
	dir, d := generate(t, "s", 3)
	src, skipped, k, out := initGo(t, dir)
	assert.Equal(t, []prefixes.Skipped{{File: "manifest.json", Reason: "a ctxcode manifest, not data"}}, skipped)
	assert.Contains(t, src, "\tAssigneeID    string  `json:\"assignee_id\"` // \"\" when null\n")
	assert.Contains(t, src, "\tEstimateHours float64 `json:\"estimate_hours\"`\n")
	assert.Equal(t, "map[events:2000 projects:8 tasks:500 teams:3 users:30]", out[1])
	assert.Contains(t, out[2], "tasks.Status: [blocked done in_progress review todo]\n")
	assert.Contains(t, out[2], "events.Action: [commented created reassigned status_changed]\n")

	tasks, err := datasets.Tasks(d)
	require.NoError(t, err)
	res, err := k.Execute(context.Background(), `import "math"`, kernel.ExecOptions{}) // pm-go imports it too
	require.NoError(t, err)
	require.Equal(t, kernel.StatusOK, res.Status)
	for _, task := range tasks {
		code, err := datasets.Reference(task, datasets.GoPM)
		require.NoError(t, err)
		gradeGo(t, k, task, code)
	}
}

func TestInitGoEmpty(t *testing.T) {
	_, skipped, err := prefixes.Init(t.TempDir(), kernel.Go)
	assert.ErrorContains(t, err, "no loadable file")
	assert.Empty(t, skipped)
}
