package datasets_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/datasets"
)

func mustTier(t testing.TB, name string) datasets.Tier {
	t.Helper()
	tr, err := datasets.ParseTier(name)
	require.NoError(t, err)
	return tr
}

// index is a dataset's lookups, built once per dataset for the invariants.
type index struct {
	d        *datasets.Dataset
	teams    map[string]datasets.Team
	users    map[string]datasets.User
	projects map[string]datasets.Project
	tasks    map[string]datasets.TaskRecord
	events   map[string][]datasets.Event // task id → its events, in file order
}

func newIndex(d *datasets.Dataset) *index {
	x := &index{d: d, teams: map[string]datasets.Team{}, users: map[string]datasets.User{},
		projects: map[string]datasets.Project{}, tasks: map[string]datasets.TaskRecord{}, events: map[string][]datasets.Event{}}
	for _, r := range d.Teams {
		x.teams[r.ID] = r
	}
	for _, r := range d.Users {
		x.users[r.ID] = r
	}
	for _, r := range d.Projects {
		x.projects[r.ID] = r
	}
	for _, r := range d.Tasks {
		x.tasks[r.ID] = r
	}
	for _, e := range d.Events {
		x.events[e.TaskID] = append(x.events[e.TaskID], e)
	}
	return x
}

// resolves checks that key is in m without assert.Contains's linear scan.
func resolves[V any](t *testing.T, m map[string]V, key, where string) {
	t.Helper()
	if _, ok := m[key]; !ok {
		t.Errorf("%s: %q does not resolve", where, key)
	}
}

func (x *index) teamOfTask(k datasets.TaskRecord) string { return x.projects[k.ProjectID].TeamID }

func parseTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err, s)
	require.Equal(t, s, at.UTC().Format(time.RFC3339), "RFC 3339 UTC with second precision")
	return at
}

var (
	from2025  = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	from2026  = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	eventsEnd = time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
)

// invariants are the properties every generated dataset has.
var invariants = []struct {
	name  string
	check func(t *testing.T, tier datasets.Tier, x *index)
}{
	{"counts are the tier's", func(t *testing.T, tier datasets.Tier, x *index) {
		assert.Len(t, x.d.Teams, tier.Teams)
		assert.Len(t, x.d.Users, tier.Users)
		assert.Len(t, x.d.Projects, tier.Projects)
		assert.Len(t, x.d.Tasks, tier.Tasks)
		assert.Len(t, x.d.Events, tier.Events)
		assert.Equal(t, tier.Name, x.d.Tier)
	}},
	{"ids are well formed and in order", func(t *testing.T, tier datasets.Tier, x *index) {
		for i, r := range x.d.Teams {
			assert.Equal(t, fmt.Sprintf("T%02d", i+1), r.ID)
		}
		for i, r := range x.d.Users {
			assert.Equal(t, fmt.Sprintf("U%03d", i+1), r.ID)
		}
		for i, r := range x.d.Projects {
			assert.Equal(t, fmt.Sprintf("P%02d", i+1), r.ID)
		}
		for i, r := range x.d.Tasks {
			assert.Equal(t, fmt.Sprintf("K%05d", i+1), r.ID)
		}
		for i, r := range x.d.Events {
			assert.Equal(t, fmt.Sprintf("E%06d", i+1), r.ID)
		}
	}},
	{"names are unique", func(t *testing.T, tier datasets.Tier, x *index) {
		unique := func(kind string, names []string) {
			seen := map[string]bool{}
			for _, n := range names {
				assert.NotEmpty(t, n, kind)
				assert.False(t, seen[n], "%s name %q twice", kind, n)
				seen[n] = true
			}
		}
		var teams, users, projects []string
		for _, r := range x.d.Teams {
			teams = append(teams, r.Name)
		}
		fullName := regexp.MustCompile(`^[A-Z][a-z]+ [A-Z][a-z]+$`)
		for _, r := range x.d.Users {
			users = append(users, r.Name)
			assert.Regexp(t, fullName, r.Name, "first and last name")
		}
		for _, r := range x.d.Projects {
			projects = append(projects, r.Name)
		}
		unique("team", teams)
		unique("user", users)
		unique("project", projects)
	}},
	{"values are in their sets", func(t *testing.T, tier datasets.Tier, x *index) {
		for _, r := range x.d.Users {
			assert.Contains(t, datasets.Roles, r.Role, r.ID)
		}
		for _, r := range x.d.Projects {
			assert.Contains(t, datasets.ProjectStatuses, r.Status, r.ID)
		}
		for _, r := range x.d.Tasks {
			assert.Contains(t, datasets.TaskStatuses, r.Status, r.ID)
			assert.Contains(t, datasets.Priorities, r.Priority, r.ID)
			assert.NotEmpty(t, r.Title, r.ID)
			assert.True(t, r.EstimateHours > 0 && r.EstimateHours <= 40 && r.EstimateHours*2 == float64(int(r.EstimateHours*2)),
				"%s: estimate %v hours, want halves from 0.5 to 40", r.ID, r.EstimateHours)
		}
		for _, e := range x.d.Events {
			assert.Contains(t, datasets.Actions, e.Action, e.ID)
			moves := e.Action == "status_changed" || e.Action == "reassigned"
			assert.Equal(t, moves, e.From != nil, "%s %s: from", e.ID, e.Action)
			assert.Equal(t, moves, e.To != nil, "%s %s: to", e.ID, e.Action)
			if e.Action == "status_changed" {
				assert.Contains(t, datasets.TaskStatuses, *e.From, e.ID)
				assert.Contains(t, datasets.TaskStatuses, *e.To, e.ID)
				assert.NotEqual(t, *e.From, *e.To, e.ID)
			}
		}
	}},
	{"foreign keys resolve", func(t *testing.T, tier datasets.Tier, x *index) {
		for _, r := range x.d.Users {
			resolves(t, x.teams, r.TeamID, r.ID)
		}
		for _, r := range x.d.Projects {
			resolves(t, x.teams, r.TeamID, r.ID)
			assert.Equal(t, r.TeamID, x.users[r.LeadID].TeamID, "%s: the lead %s is on the project's team", r.ID, r.LeadID)
		}
		for _, r := range x.d.Tasks {
			resolves(t, x.projects, r.ProjectID, r.ID)
			resolves(t, x.users, r.ReporterID, r.ID)
			if r.AssigneeID != nil {
				assert.Equal(t, x.teamOfTask(r), x.users[*r.AssigneeID].TeamID, "%s: the assignee is on the project's team", r.ID)
			}
		}
		for _, e := range x.d.Events {
			resolves(t, x.tasks, e.TaskID, e.ID)
			resolves(t, x.users, e.UserID, e.ID)
			if e.Action == "reassigned" {
				resolves(t, x.users, *e.From, e.ID)
				resolves(t, x.users, *e.To, e.ID)
				assert.NotEqual(t, *e.From, *e.To, e.ID)
			}
		}
	}},
	{"times are in their windows", func(t *testing.T, tier datasets.Tier, x *index) {
		for _, r := range x.d.Tasks {
			at := parseTime(t, r.CreatedAt)
			assert.True(t, !at.Before(from2025) && at.Before(from2026), "%s created %s, want 2025", r.ID, r.CreatedAt)
			if r.DueDate != nil {
				due, err := time.Parse(time.DateOnly, *r.DueDate)
				require.NoError(t, err)
				assert.True(t, due.After(at), "%s: due %s before created %s", r.ID, *r.DueDate, r.CreatedAt)
			}
		}
		var last time.Time
		for _, e := range x.d.Events {
			at := parseTime(t, e.At)
			assert.True(t, !at.Before(from2025) && at.Before(eventsEnd), "%s at %s", e.ID, e.At)
			assert.False(t, at.Before(last), "%s: events.jsonl is in time order", e.ID)
			last = at
		}
	}},
	{"one created event, first, at created_at, by the reporter", func(t *testing.T, tier datasets.Tier, x *index) {
		for _, k := range x.d.Tasks {
			es := x.events[k.ID]
			require.NotEmpty(t, es, k.ID)
			assert.Equal(t, "created", es[0].Action, k.ID)
			assert.Equal(t, k.CreatedAt, es[0].At, k.ID)
			assert.Equal(t, k.ReporterID, es[0].UserID, k.ID)
			n := 0
			for _, e := range es {
				if e.Action == "created" {
					n++
				}
			}
			assert.Equal(t, 1, n, k.ID)
		}
	}},
	{"per task, event times strictly increase", func(t *testing.T, tier datasets.Tier, x *index) {
		for _, k := range x.d.Tasks {
			es := x.events[k.ID]
			for i := 1; i < len(es); i++ {
				assert.Less(t, es[i-1].At, es[i].At, "%s: %s then %s", k.ID, es[i-1].ID, es[i].ID)
			}
		}
	}},
	{"status chain runs from todo to the status", func(t *testing.T, tier datasets.Tier, x *index) {
		for _, k := range x.d.Tasks {
			cur := "todo"
			steps := 0
			for _, e := range x.events[k.ID] {
				if e.Action == "status_changed" {
					assert.Equal(t, cur, *e.From, "%s %s", k.ID, e.ID)
					cur = *e.To
					steps++
				}
			}
			assert.Equal(t, k.Status, cur, k.ID)
			if k.Status != "todo" {
				assert.NotZero(t, steps, "%s is %s without a status change", k.ID, k.Status)
			}
		}
	}},
	{"reassigned chain ends at the assignee", func(t *testing.T, tier datasets.Tier, x *index) {
		for _, k := range x.d.Tasks {
			var prev *string
			for _, e := range x.events[k.ID] {
				if e.Action != "reassigned" {
					continue
				}
				if prev != nil {
					assert.Equal(t, *prev, *e.From, "%s %s", k.ID, e.ID)
				}
				assert.Equal(t, x.teamOfTask(k), x.users[*e.To].TeamID, "%s %s: reassigned within the team", k.ID, e.ID)
				prev = e.To
			}
			if prev != nil {
				require.NotNil(t, k.AssigneeID, "%s was reassigned but has no assignee", k.ID)
				assert.Equal(t, *k.AssigneeID, *prev, k.ID)
			}
		}
	}},
	{"distributions are skewed as questions need", func(t *testing.T, tier datasets.Tier, x *index) {
		status := map[string]int{}
		unassigned := 0
		for _, k := range x.d.Tasks {
			status[k.Status]++
			if k.AssigneeID == nil {
				unassigned++
			}
		}
		n := float64(len(x.d.Tasks))
		for s, want := range map[string]float64{"todo": 0.20, "in_progress": 0.20, "review": 0.12, "blocked": 0.10, "done": 0.38} {
			assert.InDelta(t, want, float64(status[s])/n, 0.05, "share of %s tasks", s)
		}
		assert.InDelta(t, 0.08, float64(unassigned)/n, 0.04, "share of unassigned tasks")

		bounced := map[string]bool{}
		actions := map[string]int{}
		for _, e := range x.d.Events {
			actions[e.Action]++
			if e.Action == "status_changed" && *e.From == "review" && *e.To == "in_progress" {
				bounced[e.TaskID] = true
			}
		}
		assert.Greater(t, len(bounced), len(x.d.Tasks)/20, "tasks that went review → in_progress")
		assert.Greater(t, actions["reassigned"], len(x.d.Tasks)/4, "reassignments")
		assert.Greater(t, actions["commented"], len(x.d.Tasks)/10, "comments")

		size := map[string]int{}
		for _, u := range x.d.Users {
			size[u.TeamID]++
		}
		var sizes []int
		for _, team := range x.d.Teams {
			sizes = append(sizes, size[team.ID])
		}
		assert.GreaterOrEqual(t, slices.Min(sizes), 2, "every team has two users or more: %v", sizes)
		if len(sizes) >= 10 {
			assert.GreaterOrEqual(t, slices.Max(sizes), 2*slices.Min(sizes), "team sizes are skewed: %v", sizes)
		}
		projects := map[string]int{}
		for _, k := range x.d.Tasks {
			projects[k.ProjectID]++
		}
		assert.Len(t, projects, len(x.d.Projects), "every project has tasks")
	}},
	{"most months have a clear top 3 of reassigners", func(t *testing.T, tier datasets.Tier, x *index) {
		byMonth := map[string]map[string]int{}
		for _, e := range x.d.Events {
			if e.Action == "reassigned" && strings.HasPrefix(e.At, "2025-") {
				m := e.At[:7]
				if byMonth[m] == nil {
					byMonth[m] = map[string]int{}
				}
				byMonth[m][e.UserID]++
			}
		}
		clear := 0
		for _, counts := range byMonth {
			var c []int
			for _, n := range counts {
				c = append(c, n)
			}
			slices.Sort(c)
			slices.Reverse(c)
			c = append(c, 0, 0, 0, 0)
			if c[0] > c[1] && c[1] > c[2] && c[2] > c[3] {
				clear++
			}
		}
		assert.GreaterOrEqual(t, clear, 9, "months of 2025 whose top 3 reassigners have distinct counts, ahead of the 4th")
	}},
}

func TestGenerateInvariants(t *testing.T) {
	for _, tier := range []string{"s", "xl"} {
		for _, seed := range []int64{1, 20260101} {
			tr := mustTier(t, tier)
			x := newIndex(datasets.Generate(tr, seed))
			t.Run(fmt.Sprintf("%s/seed=%d", tier, seed), func(t *testing.T) {
				for _, inv := range invariants {
					t.Run(inv.name, func(t *testing.T) { inv.check(t, tr, x) })
				}
			})
		}
	}
}

func TestGenerateMediumTierFits(t *testing.T) {
	tr := mustTier(t, "m")
	d := datasets.Generate(tr, 3)
	assert.Len(t, d.Events, tr.Events)
	assert.Len(t, d.Tasks, tr.Tasks)
}

func TestGenerateDeterministic(t *testing.T) {
	for _, tier := range []string{"s", "xl"} {
		t.Run(tier, func(t *testing.T) {
			tr := mustTier(t, tier)
			assert.Equal(t, datasets.Generate(tr, 5), datasets.Generate(tr, 5), "same tier and seed")
			assert.NotEqual(t, datasets.Generate(tr, 5).Events, datasets.Generate(tr, 6).Events, "another seed")
		})
	}
}

func TestGenerateRefusesTiersThatCannotFit(t *testing.T) {
	tests := []struct {
		name string
		tier datasets.Tier
		want string
	}{
		{"too few events", datasets.Tier{Name: "tight", Teams: 1, Users: 2, Projects: 1, Tasks: 50, Events: 50}, "cannot fit"},
		{"one user per team", datasets.Tier{Name: "thin", Teams: 3, Users: 5, Projects: 3, Tasks: 10, Events: 40}, "2 per team"},
		{"more teams than names", datasets.Tier{Name: "wide", Teams: 41, Users: 100, Projects: 41, Tasks: 10, Events: 40}, "teams"},
		{"ids too narrow", datasets.Tier{Name: "huge", Teams: 3, Users: 1000, Projects: 3, Tasks: 10, Events: 40}, "id widths"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "Generate should panic")
				assert.Contains(t, fmt.Sprint(r), tt.want)
				assert.Contains(t, fmt.Sprint(r), tt.tier.Name)
			}()
			datasets.Generate(tt.tier, 1)
		})
	}
}

// BenchmarkGenerateXL generates the xl tier and writes it (target: under 1 s).
func BenchmarkGenerateXL(b *testing.B) {
	tr := mustTier(b, "xl")
	for b.Loop() {
		if _, err := datasets.Generate(tr, 1).Write(b.TempDir(), false); err != nil {
			b.Fatal(err)
		}
	}
}
