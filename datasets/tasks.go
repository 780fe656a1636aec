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
				Decimals:   tpl.decimals,
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

// GoLoader is the Go kernel's equivalent of PythonLoader: the imports, types
// and bindings of the pm-go prefix as one cell. Its type declarations are
// pm-go's, token for token (prefixes tests that), so it also runs after
// pm-go, in a kernel that refuses to change a declared type.
var GoLoader = strings.ReplaceAll(goLoader, "'", "`")

// goLoader is GoLoader with ' for the backquotes of the struct tags, which a
// raw string literal cannot hold.
const goLoader = `import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

type Team struct {
	ID   string 'json:"id"'
	Name string 'json:"name"'
}

type User struct {
	ID     string 'json:"id"'
	Name   string 'json:"name"'
	TeamID string 'json:"team_id"'
	Role   string 'json:"role"'
}

type Project struct {
	ID     string 'json:"id"'
	Name   string 'json:"name"'
	TeamID string 'json:"team_id"'
	LeadID string 'json:"lead_id"'
	Status string 'json:"status"'
}

type Task struct {
	ID            string  'json:"id"'
	ProjectID     string  'json:"project_id"'
	Title         string  'json:"title"'
	Status        string  'json:"status"'
	Priority      string  'json:"priority"'
	AssigneeID    string  'json:"assignee_id"' // "" when null
	ReporterID    string  'json:"reporter_id"'
	CreatedAt     string  'json:"created_at"'
	DueDate       string  'json:"due_date"' // YYYY-MM-DD, "" when null
	EstimateHours float64 'json:"estimate_hours"'
}

type Event struct {
	ID     string 'json:"id"'
	TaskID string 'json:"task_id"'
	UserID string 'json:"user_id"'
	Action string 'json:"action"'
	At     string 'json:"at"'
	From   string 'json:"from"' // "" when null
	To     string 'json:"to"'   // "" when null
}

// load reads data/NAME.jsonl, one JSON object a line, into rows, a pointer to a slice.
func load(name string, rows any) {
	b, err := os.ReadFile("data/" + name + ".jsonl")
	if err != nil {
		panic(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if err := json.Unmarshal([]byte("["+strings.Join(lines, ",")+"]"), rows); err != nil {
		panic(err)
	}
}

var (
	teams    []Team
	users    []User
	projects []Project
	tasks    []Task
	events   []Event
)
load("teams", &teams)
load("users", &users)
load("projects", &projects)
load("tasks", &tasks)
load("events", &events)
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
	_, err = ParseSolutionKind(string(kind))
	return "", err
}

// SolutionKinds are the reference solution kinds, in the order help lists them.
var SolutionKinds = []SolutionKind{PythonPM, PythonLoad, GoPM, GoLoad}

// ParseSolutionKind returns the solution kind named s.
func ParseSolutionKind(s string) (SolutionKind, error) {
	for _, k := range SolutionKinds {
		if string(k) == s {
			return k, nil
		}
	}
	names := make([]string, len(SolutionKinds))
	for i, k := range SolutionKinds {
		names[i] = string(k)
	}
	return "", fmt.Errorf("unknown solution kind %q: expected %s", s, strings.Join(names, ", "))
}
