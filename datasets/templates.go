package datasets

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// InstancesPerTemplate is how many tasks each template makes per dataset.
const InstancesPerTemplate = 3

// Solution kinds: the reference solutions every task carries as code.
type SolutionKind string

// Reference solution kinds.
const (
	// PythonPM runs after the pm prefix, which binds teams, users,
	// projects, tasks and events as lists of dicts.
	PythonPM SolutionKind = "python-pm"
	// PythonLoad loads data/*.jsonl itself (the non-binding condition).
	PythonLoad SolutionKind = "python-load"
	// GoPM is Go for the Go kernel, run after the pm-go prefix, which binds
	// teams, users, projects, tasks and events as slices of the structs
	// Team, User, Project, Task and Event (a null in the data is "") and
	// imports encoding/json, fmt, math, os, sort and strings.
	GoPM SolutionKind = "go-pm"
	// GoLoad is Go for the Go kernel that loads data/*.jsonl itself: GoLoader,
	// then the GoPM body.
	GoLoad SolutionKind = "go-load"
)

// index is a dataset with the lookups the templates need.
type index struct {
	d            *Dataset
	user         map[string]User
	userByName   map[string]User
	project      map[string]Project
	team         map[string]Team
	task         map[string]TaskRecord
	tasksOf      map[string][]TaskRecord // by project id
	projectsOf   map[string][]Project    // by team id
	eventsOfTask map[string][]Event
}

func newIndex(d *Dataset) *index {
	ix := &index{d: d, user: make(map[string]User, len(d.Users)), userByName: make(map[string]User, len(d.Users)),
		project: make(map[string]Project, len(d.Projects)), team: make(map[string]Team, len(d.Teams)),
		task: make(map[string]TaskRecord, len(d.Tasks)), tasksOf: make(map[string][]TaskRecord, len(d.Projects)),
		projectsOf: make(map[string][]Project, len(d.Teams)), eventsOfTask: make(map[string][]Event, len(d.Tasks))}
	for _, t := range d.Teams {
		ix.team[t.ID] = t
	}
	for _, u := range d.Users {
		ix.user[u.ID], ix.userByName[u.Name] = u, u
	}
	for _, p := range d.Projects {
		ix.project[p.ID] = p
		ix.projectsOf[p.TeamID] = append(ix.projectsOf[p.TeamID], p)
	}
	for _, t := range d.Tasks {
		ix.task[t.ID] = t
		ix.tasksOf[t.ProjectID] = append(ix.tasksOf[t.ProjectID], t)
	}
	for _, e := range d.Events {
		ix.eventsOfTask[e.TaskID] = append(ix.eventsOfTask[e.TaskID], e)
	}
	return ix
}

// template is one kind of question.
type template struct {
	id     string
	answer AnswerType
	// decimals is how many decimals a Number question asks the answer
	// rounded to (Task.Decimals); the gold is so rounded.
	decimals int
	// pick draws parameters; ok is false when the draw would make a trivial
	// or ambiguous question (the caller draws again).
	pick     func(ix *index, r *rand.Rand) (params map[string]any, ok bool)
	question func(p map[string]any) string
	gold     func(ix *index, p map[string]any) any
	// python is the body of the PythonPM solution; it ends with ANSWER(...).
	python func(p map[string]any) string
	// goBody is the body of the GoPM solution, written against the typed
	// slices of pm-go (and GoLoader); it ends with ANSWER(...).
	goBody func(p map[string]any) string
}

func str(p map[string]any, k string) string { return p[k].(string) }

// num reads an integer parameter, also after a JSON round trip.
func num(p map[string]any, k string) int {
	switch v := p[k].(type) {
	case int:
		return v
	case float64:
		return int(v)
	}
	return 0
}
func q(s string) string { return strconv.Quote(s) }

func pickOne[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

var templates = []template{
	{
		id: "t1", answer: Integer,
		pick: func(ix *index, r *rand.Rand) (map[string]any, bool) {
			p := pickOne(r, ix.d.Projects)
			s := pickOne(r, TaskStatuses)
			return map[string]any{"project_id": p.ID, "project": p.Name, "status": s}, true
		},
		question: func(p map[string]any) string {
			return fmt.Sprintf("How many tasks in project %q currently have status %q?", str(p, "project"), str(p, "status"))
		},
		gold: func(ix *index, p map[string]any) any {
			n := 0
			for _, t := range ix.tasksOf[str(p, "project_id")] {
				if t.Status == str(p, "status") {
					n++
				}
			}
			return n
		},
		python: func(p map[string]any) string {
			return fmt.Sprintf("pid = next(p['id'] for p in projects if p['name'] == %s)\n"+
				"ANSWER(sum(1 for t in tasks if t['project_id'] == pid and t['status'] == %s))", q(str(p, "project")), q(str(p, "status")))
		},
		goBody: func(p map[string]any) string {
			return fmt.Sprintf(`pid := ""
for _, p := range projects {
	if p.Name == %s {
		pid = p.ID
	}
}
n := 0
for _, t := range tasks {
	if t.ProjectID == pid && t.Status == %s {
		n++
	}
}
ANSWER(n)`, q(str(p, "project")), q(str(p, "status")))
		},
	},
	{
		id: "t2", answer: Set,
		pick: func(ix *index, r *rand.Rand) (map[string]any, bool) {
			u := pickOne(r, ix.d.Users)
			var dues []string
			for _, t := range ix.d.Tasks {
				if t.AssigneeID != nil && *t.AssigneeID == u.ID && t.Status != "done" && t.DueDate != nil {
					dues = append(dues, *t.DueDate)
				}
			}
			if len(dues) < 2 {
				return nil, false
			}
			sort.Strings(dues)
			// A date after some but not all of the due dates.
			date := dayAfter(dues[r.IntN(len(dues)-1)])
			return map[string]any{"user_id": u.ID, "user": u.Name, "date": date}, date <= dues[len(dues)-1]
		},
		question: func(p map[string]any) string {
			return fmt.Sprintf("Which tasks assigned to %s are not done and have a due date before %s? Answer with task ids.", str(p, "user"), str(p, "date"))
		},
		gold: func(ix *index, p map[string]any) any {
			var ids []string
			for _, t := range ix.d.Tasks {
				if t.AssigneeID != nil && *t.AssigneeID == str(p, "user_id") && t.Status != "done" && t.DueDate != nil && *t.DueDate < str(p, "date") {
					ids = append(ids, t.ID)
				}
			}
			return ids
		},
		python: func(p map[string]any) string {
			return fmt.Sprintf("uid = next(u['id'] for u in users if u['name'] == %s)\n"+
				"ANSWER(sorted(t['id'] for t in tasks if t['assignee_id'] == uid and t['status'] != 'done'\n"+
				"              and t['due_date'] is not None and t['due_date'] < %s))", q(str(p, "user")), q(str(p, "date")))
		},
		goBody: func(p map[string]any) string {
			return fmt.Sprintf(`uid := ""
for _, u := range users {
	if u.Name == %s {
		uid = u.ID
	}
}
ids := []string{}
for _, t := range tasks {
	if t.AssigneeID == uid && t.Status != "done" && t.DueDate != "" && t.DueDate < %s {
		ids = append(ids, t.ID)
	}
}
ANSWER(ids)`, q(str(p, "user")), q(str(p, "date")))
		},
	},
	{
		id: "t3", answer: String,
		pick: func(ix *index, r *rand.Rand) (map[string]any, bool) {
			s := pickOne(r, TaskStatuses)
			p := map[string]any{"status": s}
			_, unique := teamArgmax(ix, s)
			return p, unique
		},
		question: func(p map[string]any) string {
			return fmt.Sprintf("Which team has the most tasks with status %q across its projects? Answer with the team name.", str(p, "status"))
		},
		gold: func(ix *index, p map[string]any) any {
			name, _ := teamArgmax(ix, str(p, "status"))
			return name
		},
		python: func(p map[string]any) string {
			return fmt.Sprintf("from collections import Counter\n"+
				"team_of = {p['id']: p['team_id'] for p in projects}\n"+
				"c = Counter(team_of[t['project_id']] for t in tasks if t['status'] == %s)\n"+
				"best = c.most_common(1)[0][0]\n"+
				"ANSWER(next(t['name'] for t in teams if t['id'] == best))", q(str(p, "status")))
		},
		goBody: func(p map[string]any) string {
			return fmt.Sprintf(`teamOf := map[string]string{}
for _, p := range projects {
	teamOf[p.ID] = p.TeamID
}
count := map[string]int{}
for _, t := range tasks {
	if t.Status == %s {
		count[teamOf[t.ProjectID]]++
	}
}
best, most := "", -1
for id, n := range count {
	if n > most {
		best, most = id, n
	}
}
for _, t := range teams {
	if t.ID == best {
		ANSWER(t.Name)
	}
}`, q(str(p, "status")))
		},
	},
	{
		id: "t4", answer: Number, decimals: 2,
		pick: func(ix *index, r *rand.Rand) (map[string]any, bool) {
			t := pickOne(r, ix.d.Teams)
			pr := pickOne(r, Priorities)
			p := map[string]any{"team_id": t.ID, "team": t.Name, "priority": pr}
			_, n := meanEstimate(ix, t.ID, pr)
			return p, n >= 2
		},
		question: func(p map[string]any) string {
			return fmt.Sprintf("What is the average estimate_hours of done tasks with priority %q in projects of team %q? Round to 2 decimals.", str(p, "priority"), str(p, "team"))
		},
		gold: func(ix *index, p map[string]any) any {
			m, _ := meanEstimate(ix, str(p, "team_id"), str(p, "priority"))
			return math.Round(m*100) / 100
		},
		python: func(p map[string]any) string {
			return fmt.Sprintf("tid = next(t['id'] for t in teams if t['name'] == %s)\n"+
				"pids = {p['id'] for p in projects if p['team_id'] == tid}\n"+
				"hours = [t['estimate_hours'] for t in tasks if t['project_id'] in pids and t['status'] == 'done' and t['priority'] == %s]\n"+
				"ANSWER(round(sum(hours) / len(hours), 2))", q(str(p, "team")), q(str(p, "priority")))
		},
		goBody: func(p map[string]any) string {
			return fmt.Sprintf(`tid := ""
for _, t := range teams {
	if t.Name == %s {
		tid = t.ID
	}
}
pids := map[string]bool{}
for _, p := range projects {
	if p.TeamID == tid {
		pids[p.ID] = true
	}
}
sum, n := 0.0, 0
for _, t := range tasks {
	if pids[t.ProjectID] && t.Status == "done" && t.Priority == %s {
		sum += t.EstimateHours
		n++
	}
}
ANSWER(math.Round(sum/float64(n)*100) / 100)`, q(str(p, "team")), q(str(p, "priority")))
		},
	},
	{
		id: "t5", answer: Integer,
		pick: func(ix *index, r *rand.Rand) (map[string]any, bool) {
			p := pickOne(r, ix.d.Projects)
			params := map[string]any{"project_id": p.ID, "project": p.Name}
			return params, commenters(ix, p.ID) >= 2
		},
		question: func(p map[string]any) string {
			return fmt.Sprintf("How many distinct users commented on tasks of project %q?", str(p, "project"))
		},
		gold: func(ix *index, p map[string]any) any { return commenters(ix, str(p, "project_id")) },
		python: func(p map[string]any) string {
			return fmt.Sprintf("pid = next(p['id'] for p in projects if p['name'] == %s)\n"+
				"tids = {t['id'] for t in tasks if t['project_id'] == pid}\n"+
				"ANSWER(len({e['user_id'] for e in events if e['action'] == 'commented' and e['task_id'] in tids}))", q(str(p, "project")))
		},
		goBody: func(p map[string]any) string {
			return fmt.Sprintf(`pid := ""
for _, p := range projects {
	if p.Name == %s {
		pid = p.ID
	}
}
tids := map[string]bool{}
for _, t := range tasks {
	if t.ProjectID == pid {
		tids[t.ID] = true
	}
}
who := map[string]bool{}
for _, e := range events {
	if e.Action == "commented" && tids[e.TaskID] {
		who[e.UserID] = true
	}
}
ANSWER(len(who))`, q(str(p, "project")))
		},
	},
	{
		id: "t6", answer: Set,
		pick: func(ix *index, r *rand.Rand) (map[string]any, bool) {
			t := pickOne(r, ix.d.Teams)
			counts := blockedByProject(ix, t.ID)
			if len(counts) == 0 {
				return nil, false
			}
			vals := slices.Sorted(func(yield func(int) bool) {
				for _, n := range counts {
					if !yield(n) {
						return
					}
				}
			})
			k := vals[r.IntN(len(vals))] - 1 // at least the projects with that many
			if k < 1 {
				return nil, false
			}
			return map[string]any{"team_id": t.ID, "team": t.Name, "k": k}, true
		},
		question: func(p map[string]any) string {
			return fmt.Sprintf("Which projects of team %q have more than %d blocked tasks? Answer with project names.", str(p, "team"), num(p, "k"))
		},
		gold: func(ix *index, p map[string]any) any {
			var names []string
			for pid, n := range blockedByProject(ix, str(p, "team_id")) {
				if n > num(p, "k") {
					names = append(names, ix.project[pid].Name)
				}
			}
			sort.Strings(names)
			return names
		},
		python: func(p map[string]any) string {
			return fmt.Sprintf("from collections import Counter\n"+
				"tid = next(t['id'] for t in teams if t['name'] == %s)\n"+
				"mine = {p['id']: p['name'] for p in projects if p['team_id'] == tid}\n"+
				"blocked = Counter(t['project_id'] for t in tasks if t['project_id'] in mine and t['status'] == 'blocked')\n"+
				"ANSWER(sorted(mine[pid] for pid, n in blocked.items() if n > %d))", q(str(p, "team")), num(p, "k"))
		},
		goBody: func(p map[string]any) string {
			return fmt.Sprintf(`tid := ""
for _, t := range teams {
	if t.Name == %s {
		tid = t.ID
	}
}
mine := map[string]string{}
for _, p := range projects {
	if p.TeamID == tid {
		mine[p.ID] = p.Name
	}
}
blocked := map[string]int{}
for _, t := range tasks {
	if mine[t.ProjectID] != "" && t.Status == "blocked" {
		blocked[t.ProjectID]++
	}
}
names := []string{}
for pid, n := range blocked {
	if n > %d {
		names = append(names, mine[pid])
	}
}
ANSWER(names)`, q(str(p, "team")), num(p, "k"))
		},
	},
	{
		id: "t7", answer: Integer,
		pick: func(ix *index, r *rand.Rand) (map[string]any, bool) {
			p := pickOne(r, ix.d.Projects)
			return map[string]any{"project_id": p.ID, "project": p.Name}, bounced(ix, p.ID) >= 1
		},
		question: func(p map[string]any) string {
			return fmt.Sprintf("How many tasks in project %q were moved from review back to in_progress at least once?", str(p, "project"))
		},
		gold: func(ix *index, p map[string]any) any { return bounced(ix, str(p, "project_id")) },
		python: func(p map[string]any) string {
			return fmt.Sprintf("pid = next(p['id'] for p in projects if p['name'] == %s)\n"+
				"tids = {t['id'] for t in tasks if t['project_id'] == pid}\n"+
				"ANSWER(len({e['task_id'] for e in events if e['task_id'] in tids and e['action'] == 'status_changed'\n"+
				"            and e['from'] == 'review' and e['to'] == 'in_progress'}))", q(str(p, "project")))
		},
		goBody: func(p map[string]any) string {
			return fmt.Sprintf(`pid := ""
for _, p := range projects {
	if p.Name == %s {
		pid = p.ID
	}
}
tids := map[string]bool{}
for _, t := range tasks {
	if t.ProjectID == pid {
		tids[t.ID] = true
	}
}
moved := map[string]bool{}
for _, e := range events {
	if tids[e.TaskID] && e.Action == "status_changed" && e.From == "review" && e.To == "in_progress" {
		moved[e.TaskID] = true
	}
}
ANSWER(len(moved))`, q(str(p, "project")))
		},
	},
	{
		id: "t8", answer: List,
		pick: func(ix *index, r *rand.Rand) (map[string]any, bool) {
			e := pickOne(r, ix.d.Events)
			month := e.At[:7]
			_, ok := topReassigners(ix, month)
			return map[string]any{"month": month}, ok
		},
		question: func(p map[string]any) string {
			return fmt.Sprintf("Who are the 3 users who performed the most reassignments in %s, most first? Answer with their names.", str(p, "month"))
		},
		gold: func(ix *index, p map[string]any) any {
			names, _ := topReassigners(ix, str(p, "month"))
			return names
		},
		python: func(p map[string]any) string {
			return fmt.Sprintf("from collections import Counter\n"+
				"c = Counter(e['user_id'] for e in events if e['action'] == 'reassigned' and e['at'].startswith(%s))\n"+
				"name = {u['id']: u['name'] for u in users}\n"+
				"ANSWER([name[uid] for uid, _ in c.most_common(3)])", q(str(p, "month")))
		},
		goBody: func(p map[string]any) string {
			return fmt.Sprintf(`count := map[string]int{}
for _, e := range events {
	if e.Action == "reassigned" && strings.HasPrefix(e.At, %s) {
		count[e.UserID]++
	}
}
ids := []string{}
for id := range count {
	ids = append(ids, id)
}
sort.Slice(ids, func(i, j int) bool { return count[ids[i]] > count[ids[j]] })
name := map[string]string{}
for _, u := range users {
	name[u.ID] = u.Name
}
ANSWER([]string{name[ids[0]], name[ids[1]], name[ids[2]]})`, q(str(p, "month")))
		},
	},
}

func dayAfter(date string) string {
	t, err := time.Parse("2006-01-02", date)
	if err != nil {
		return date
	}
	return t.AddDate(0, 0, 1).Format("2006-01-02")
}

// teamArgmax is the team with the most tasks of a status, and whether it
// is the only one with that many.
func teamArgmax(ix *index, status string) (string, bool) {
	count := map[string]int{}
	for _, t := range ix.d.Tasks {
		if t.Status == status {
			count[ix.project[t.ProjectID].TeamID]++
		}
	}
	best, most, ties := "", 0, 0
	for _, team := range ix.d.Teams {
		switch n := count[team.ID]; {
		case n > most:
			best, most, ties = team.Name, n, 0
		case n == most:
			ties++
		}
	}
	return best, most > 0 && ties == 0
}

func meanEstimate(ix *index, teamID, priority string) (float64, int) {
	sum, n := 0.0, 0
	for _, p := range ix.projectsOf[teamID] {
		for _, t := range ix.tasksOf[p.ID] {
			if t.Status == "done" && t.Priority == priority {
				sum += t.EstimateHours
				n++
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

func commenters(ix *index, projectID string) int {
	who := map[string]bool{}
	for _, t := range ix.tasksOf[projectID] {
		for _, e := range ix.eventsOfTask[t.ID] {
			if e.Action == "commented" {
				who[e.UserID] = true
			}
		}
	}
	return len(who)
}

func blockedByProject(ix *index, teamID string) map[string]int {
	counts := map[string]int{}
	for _, p := range ix.projectsOf[teamID] {
		for _, t := range ix.tasksOf[p.ID] {
			if t.Status == "blocked" {
				counts[p.ID]++
			}
		}
	}
	return counts
}

func bounced(ix *index, projectID string) int {
	n := 0
	for _, t := range ix.tasksOf[projectID] {
		for _, e := range ix.eventsOfTask[t.ID] {
			if e.Action == "status_changed" && e.From != nil && e.To != nil && *e.From == "review" && *e.To == "in_progress" {
				n++
				break
			}
		}
	}
	return n
}

// topReassigners are the names of the three users with the most
// reassignments in a month, and whether the order is free of ties (the
// third strictly ahead of the fourth).
func topReassigners(ix *index, month string) ([]string, bool) {
	count := map[string]int{}
	for _, e := range ix.d.Events {
		if e.Action == "reassigned" && strings.HasPrefix(e.At, month) {
			count[e.UserID]++
		}
	}
	ids := make([]string, 0, len(count))
	for id := range count {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if count[ids[i]] != count[ids[j]] {
			return count[ids[i]] > count[ids[j]]
		}
		return ids[i] < ids[j]
	})
	if len(ids) < 3 {
		return nil, false
	}
	ok := count[ids[0]] > count[ids[1]] && count[ids[1]] > count[ids[2]] && (len(ids) == 3 || count[ids[2]] > count[ids[3]])
	names := []string{ix.user[ids[0]].Name, ix.user[ids[1]].Name, ix.user[ids[2]].Name}
	return names, ok
}
