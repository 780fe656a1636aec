package datasets

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Tasks returns the graded tasks of a dataset: InstancesPerTemplate of each
// template, with parameters drawn from the dataset's seed so that every
// answer is non-trivial (no empty sets, no zero counts) and unambiguous (no
// ties where a maximum or a top 3 is asked for).
func Tasks(d *Dataset) ([]Task, error) {
	ix := newIndex(d)
	var out []Task
	for n, tpl := range templates {
		r := rand.New(rand.NewPCG(uint64(d.Seed), uint64(n+1)))
		seen := map[string]bool{}
		for tries := 0; len(seen) < InstancesPerTemplate; tries++ {
			if tries > 20000 {
				return nil, fmt.Errorf("template %s: found only %d of %d usable questions in the %s tier (seed %d)",
					tpl.id, len(seen), InstancesPerTemplate, d.Tier, d.Seed)
			}
			params, ok := tpl.pick(ix, r)
			if !ok {
				continue
			}
			key, _ := json.Marshal(params) // map keys marshal sorted
			if seen[string(key)] {
				continue
			}
			gold := tpl.gold(ix, params)
			if trivial(gold) {
				continue
			}
			seen[string(key)] = true
			out = append(out, Task{
				ID:         fmt.Sprintf("%s-%s-%d", d.Tier, tpl.id, len(seen)),
				Template:   tpl.id,
				Question:   tpl.question(params),
				Params:     params,
				AnswerType: tpl.answer,
				Gold:       gold,
			})
		}
	}
	return out, nil
}

func trivial(gold any) bool {
	switch g := gold.(type) {
	case int:
		return g <= 0
	case float64:
		return g <= 0
	case string:
		return g == ""
	case []string:
		return len(g) == 0
	}
	return true
}

func templateOf(t Task) (template, error) {
	for _, tpl := range templates {
		if tpl.id == t.Template {
			return tpl, nil
		}
	}
	return template{}, fmt.Errorf("task %s: unknown template %q", t.ID, t.Template)
}

// PythonLoader binds teams, users, projects, tasks and events from
// data/*.jsonl: what the pm prefix does, as one statement.
const PythonLoader = "import json\n" +
	"teams, users, projects, tasks, events = ([json.loads(l) for l in open(f'data/{n}.jsonl')]\n" +
	"    for n in ['teams', 'users', 'projects', 'tasks', 'events'])\n"

// GoLoader is the Go kernel's equivalent of PythonLoader.
const GoLoader = `import (
	"encoding/json"
	"math"
	"os"
	"sort"
	"strings"
)

func loadJSONL(name string) []map[string]any {
	b, err := os.ReadFile("data/" + name + ".jsonl")
	if err != nil {
		panic(err)
	}
	rows := []map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		row := map[string]any{}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			panic(err)
		}
		rows = append(rows, row)
	}
	return rows
}

teams, users, projects, tasks, events := loadJSONL("teams"), loadJSONL("users"), loadJSONL("projects"), loadJSONL("tasks"), loadJSONL("events")
`

// Reference returns a task's reference solution of the given kind: code that
// computes the answer and ends with ANSWER(...).
func Reference(t Task, kind SolutionKind) (string, error) {
	tpl, err := templateOf(t)
	if err != nil {
		return "", err
	}
	switch kind {
	case PythonPM:
		return tpl.python(t.Params), nil
	case PythonLoad:
		return PythonLoader + tpl.python(t.Params), nil
	case GoPM:
		return tpl.goBody(t.Params), nil
	case GoLoad:
		return GoLoader + tpl.goBody(t.Params), nil
	}
	return "", fmt.Errorf("unknown solution kind %q: expected %s", kind, strings.Join([]string{string(PythonPM), string(PythonLoad), string(GoPM), string(GoLoad)}, ", "))
}
