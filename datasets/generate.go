package datasets

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// GeneratorVersion is written into every manifest. Bump it whenever
// Generate's output changes for some tier and seed.
const GeneratorVersion = 1

// The generated workspace lives in this window: tasks are created in 2025,
// their later events may run into the first quarter of 2026.
var (
	createdFrom = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	createdTo   = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix() // exclusive
	eventsTo    = time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC).Unix() // exclusive
)

// Distributions. Weights are relative; each table is indexed like the
// field values in types.go.
var (
	roleWeights          = []float64{0.66, 0.12, 0.08, 0.14}       // engineer, designer, manager, qa (plus one manager per team)
	projectStatusWeights = []float64{0.78, 0.14, 0.08}             // active, paused, archived
	taskStatusWeights    = []float64{0.20, 0.20, 0.12, 0.10, 0.38} // todo, in_progress, review, blocked, done
	priorityWeights      = []float64{0.20, 0.45, 0.25, 0.10}       // low, medium, high, urgent
	estimateValues       = []float64{0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40}
	estimateWeights      = []float64{2, 5, 3, 8, 3, 8, 9, 6, 7, 8, 4, 4, 4, 2, 2, 1, 1}

	roleWork     = map[string]float64{"engineer": 1, "designer": 0.6, "qa": 0.6, "manager": 0.2} // tasks assigned
	roleLead     = map[string]float64{"engineer": 2, "designer": 1, "qa": 1, "manager": 4}       // chance to lead a project
	roleReassign = map[string]float64{"engineer": 1, "designer": 0.5, "qa": 0.5, "manager": 5}   // reassignments made
	leadReassign = 3.0                                                                           // leads reassign more
	priorityTalk = map[string]float64{"low": 0.6, "medium": 1, "high": 1.4, "urgent": 2}         // comments per task
)

// Skews and rates.
const (
	teamSizeSkew     = 0.7  // Zipf exponent of extra users per team (every team has at least 2)
	projectTaskSkew  = 0.8  // Zipf exponent of tasks per project
	reassignSkew     = 1.1  // Zipf exponent of how much each user reassigns
	reassignJitter   = 0.8  // sigma of the monthly log-normal factor on it, so each month has its own leaders
	unassignedTodo   = 0.30 // share of todo tasks without an assignee
	unassignedOther  = 0.02 // share of other tasks without an assignee
	noDueDate        = 0.30
	bounceRate       = 0.20 // tasks at review or done that went review → in_progress at least once
	bounceRateOpen   = 0.10 // the same for tasks back at in_progress or blocked
	doubleBounce     = 0.30 // of those, the share that bounced twice
	blockedEpisode   = 0.08 // tasks past in_progress that were blocked for a while on the way
	reassignRate     = 0.30 // assigned tasks whose assignee changed
	reassignByLead   = 0.30 // reassignments done by the project's lead; the rest by a skewed few
	meanGapSeconds   = 20 * 3600
	maxGapSeconds    = 8 * 24 * 3600
	minGapSeconds    = 60
	outsideTeamShare = 0.15 // reporters and commenters from outside the project's team
)

var teamNames = []string{
	"Aurora", "Basalt", "Cobalt", "Delta", "Ember", "Falcon", "Granite", "Harbor",
	"Indigo", "Juniper", "Kestrel", "Lumen", "Meridian", "Nimbus", "Onyx", "Pioneer",
	"Quartz", "Raven", "Summit", "Tundra", "Umber", "Vertex", "Willow", "Xenon",
	"Yarrow", "Zephyr", "Atlas", "Beacon", "Cascade", "Drift", "Echo", "Fjord",
	"Glacier", "Horizon", "Ion", "Jade", "Keystone", "Lotus", "Monsoon", "Nova",
}

var firstNames = []string{
	"Ada", "Ben", "Carla", "David", "Elena", "Farid", "Grace", "Hugo",
	"Ines", "James", "Kenji", "Laura", "Marco", "Nadia", "Oscar", "Priya",
	"Quinn", "Rosa", "Samir", "Tara", "Umar", "Vera", "Wei", "Ximena",
	"Yusuf", "Zoe", "Aisha", "Bruno", "Chloe", "Diego", "Emma", "Felix",
	"Greta", "Hana", "Ivan", "Julia", "Kofi", "Lena", "Mateo", "Nora",
}

var lastNames = []string{
	"Abbott", "Berg", "Castro", "Dubois", "Eriksen", "Fischer", "Garcia", "Hughes",
	"Ito", "Jensen", "Kowalski", "Larsen", "Moreau", "Nakamura", "Okafor", "Patel",
	"Quintero", "Rossi", "Schmidt", "Tanaka", "Ueda", "Varga", "Walsh", "Xu",
	"Yilmaz", "Zhang", "Alvarez", "Brennan", "Chen", "Dimitrov", "Engel", "Ferreira",
	"Gupta", "Horvat", "Ibrahim", "Jovanovic", "Kim", "Lopez", "Meyer", "Novak",
}

var projectAdjectives = []string{
	"Amber", "Bold", "Bright", "Calm", "Clear", "Crimson", "Swift", "Silent",
	"Golden", "Hidden", "Iron", "Lunar", "Mighty", "Northern", "Open", "Polar",
	"Quiet", "Rapid", "Red", "Silver", "Solar", "Steady", "Blue", "Green",
	"Velvet", "Wild", "Young", "Zen", "Azure", "Brave", "Copper", "Daring",
	"Early", "Frozen", "Gentle", "Hollow", "Lucky", "Noble", "Proud", "Royal",
}

var projectNouns = []string{
	"Anchor", "Bridge", "Canvas", "Compass", "Engine", "Forge", "Gateway", "Garden",
	"Lantern", "Ledger", "Lighthouse", "Matrix", "Mosaic", "Orbit", "Portal", "Prism",
	"Pipeline", "Quarry", "Radar", "Relay", "Rocket", "Sail", "Signal", "Spark",
	"Spire", "Station", "Thread", "Tower", "Vault", "Voyage", "Beacon", "Circuit",
	"Harvest", "Keel", "Meadow", "Nexus", "Outpost", "Pilot", "Ridge", "Comet",
}

var (
	titleVerbs = []string{
		"Fix", "Add", "Refactor", "Update", "Investigate", "Remove", "Document", "Migrate",
		"Optimize", "Review", "Design", "Test", "Automate", "Clean up", "Speed up", "Localize",
	}
	titleAreas = []string{
		"login", "checkout", "search", "billing", "onboarding", "notifications", "dashboard", "export",
		"import", "settings", "reports", "API", "cache", "database", "sync", "upload",
	}
	titleThings = []string{
		"flow", "page", "endpoint", "job", "schema", "error handling", "tests", "layout",
		"permissions", "metrics", "retries", "docs", "validation", "timeouts", "logging", "form",
	}
)

// picker draws indices with given relative weights.
type picker struct{ cum []float64 }

func newPicker(weights []float64) picker {
	cum := make([]float64, len(weights))
	total := 0.0
	for i, w := range weights {
		total += w
		cum[i] = total
	}
	if total <= 0 {
		panic("datasets: picker needs a positive weight")
	}
	return picker{cum: cum}
}

func (p picker) pick(r *rand.Rand) int {
	x := r.Float64() * p.cum[len(p.cum)-1]
	return sort.Search(len(p.cum), func(i int) bool { return p.cum[i] > x })
}

// zipf gives n weights 1/rank^s with the ranks in random order, so that the
// heaviest item is not always the first.
func zipf(r *rand.Rand, n int, s float64) []float64 {
	w := make([]float64, n)
	for rank, i := range r.Perm(n) {
		w[i] = 1 / math.Pow(float64(rank+1), s)
	}
	return w
}

// generator holds what Generate works out along the way: indices and
// weights that the records do not carry.
type generator struct {
	tier Tier
	r    *rand.Rand
	d    *Dataset

	members    [][]int   // team → user indices
	work       []float64 // how many tasks a user is assigned
	comment    []float64 // how much a user comments
	anyone     picker    // any user, uniformly
	commenters picker    // any user, by comment
	reassign   []picker  // who reassigns tasks, per month since January 2025
	projTeam   []int
	projLead   []int
	// per task, parallel to d.Tasks
	taskProj []int
	created  []int64
}

// Generate makes the dataset of a tier deterministically from seed. It
// panics when the tier cannot be generated (more teams or users than the
// name lists allow, fewer than two users per team, fewer projects than
// teams, or too few events for the tasks' required histories).
func Generate(tier Tier, seed int64) *Dataset {
	checkTier(tier)
	g := &generator{
		tier: tier,
		r:    rand.New(rand.NewPCG(uint64(seed), 0x6374786364617461)), // "ctxcdata"
		d:    &Dataset{Tier: tier.Name, Seed: seed},
	}
	g.teams()
	g.users()
	g.projects()
	g.tasks()
	g.events()
	return g.d
}

func checkTier(t Tier) {
	switch {
	case t.Teams < 1 || t.Teams > len(teamNames):
		panic(fmt.Sprintf("datasets: tier %q: %d teams, want 1 to %d", t.Name, t.Teams, len(teamNames)))
	case t.Users < 2*t.Teams || t.Users > len(firstNames)*len(lastNames):
		panic(fmt.Sprintf("datasets: tier %q: %d users for %d teams, want 2 per team to %d", t.Name, t.Users, t.Teams, len(firstNames)*len(lastNames)))
	case t.Projects < t.Teams || t.Projects > len(projectAdjectives)*len(projectNouns):
		panic(fmt.Sprintf("datasets: tier %q: %d projects for %d teams, want 1 per team to %d", t.Name, t.Projects, t.Teams, len(projectAdjectives)*len(projectNouns)))
	case t.Tasks < 1 || t.Users > 999 || t.Projects > 99 || t.Tasks > 99999 || t.Events > 999999:
		panic(fmt.Sprintf("datasets: tier %q: sizes do not fit the id widths (U001, P01, K00001, E000001)", t.Name))
	}
}

func (g *generator) teams() {
	for i, n := range g.r.Perm(len(teamNames))[:g.tier.Teams] {
		g.d.Teams = append(g.d.Teams, Team{ID: fmt.Sprintf("T%02d", i+1), Name: teamNames[n]})
	}
}

func (g *generator) users() {
	r, nt, nu := g.r, g.tier.Teams, g.tier.Users
	// Team sizes: two each, the rest Zipf-like.
	slots := make([]int, 0, nu)
	for t := range nt {
		slots = append(slots, t, t)
	}
	teamPick := newPicker(zipf(r, nt, teamSizeSkew))
	for len(slots) < nu {
		slots = append(slots, teamPick.pick(r))
	}
	r.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })

	names := r.Perm(len(firstNames) * len(lastNames))[:nu]
	g.members = make([][]int, nt)
	rolePick := newPicker(roleWeights)
	for i, t := range slots {
		n := names[i]
		g.d.Users = append(g.d.Users, User{
			ID:     fmt.Sprintf("U%03d", i+1),
			Name:   firstNames[n/len(lastNames)] + " " + lastNames[n%len(lastNames)],
			TeamID: g.d.Teams[t].ID,
			Role:   Roles[rolePick.pick(r)],
		})
		g.members[t] = append(g.members[t], i)
	}
	// Every team has a manager.
	for _, m := range g.members {
		g.d.Users[m[r.IntN(len(m))]].Role = "manager"
	}
	g.work = make([]float64, nu)
	g.comment = make([]float64, nu)
	for i, u := range g.d.Users {
		g.work[i] = math.Exp(0.5*r.NormFloat64()) * roleWork[u.Role]
		g.comment[i] = math.Exp(1.0 * r.NormFloat64())
	}
	ones := make([]float64, nu)
	for i := range ones {
		ones[i] = 1
	}
	g.anyone, g.commenters = newPicker(ones), newPicker(g.comment)
}

func (g *generator) projects() {
	r, nt, np := g.r, g.tier.Teams, g.tier.Projects
	teams := make([]int, 0, np)
	for t := range nt {
		teams = append(teams, t)
	}
	sizes := make([]float64, nt)
	for t, m := range g.members {
		sizes[t] = float64(len(m))
	}
	bySize := newPicker(sizes)
	for len(teams) < np {
		teams = append(teams, bySize.pick(r))
	}
	r.Shuffle(len(teams), func(i, j int) { teams[i], teams[j] = teams[j], teams[i] })

	names := r.Perm(len(projectAdjectives) * len(projectNouns))[:np]
	statusPick := newPicker(projectStatusWeights)
	isLead := make([]bool, len(g.d.Users))
	for i, t := range teams {
		m := g.members[t]
		w := make([]float64, len(m))
		for j, u := range m {
			w[j] = roleLead[g.d.Users[u].Role]
		}
		lead := m[newPicker(w).pick(r)]
		isLead[lead] = true
		n := names[i]
		g.d.Projects = append(g.d.Projects, Project{
			ID:     fmt.Sprintf("P%02d", i+1),
			Name:   projectAdjectives[n/len(projectNouns)] + " " + projectNouns[n%len(projectNouns)],
			TeamID: g.d.Teams[t].ID,
			LeadID: g.d.Users[lead].ID,
			Status: ProjectStatuses[statusPick.pick(r)],
		})
		g.projTeam = append(g.projTeam, t)
		g.projLead = append(g.projLead, lead)
	}
	// A skewed few do most reassignments: managers and leads above all.
	w := zipf(r, len(g.d.Users), reassignSkew)
	for i, u := range g.d.Users {
		w[i] *= roleReassign[u.Role]
		if isLead[i] {
			w[i] *= leadReassign
		}
	}
	for range monthIndex(eventsTo-1) + 1 {
		mw := make([]float64, len(w))
		for i := range w {
			mw[i] = w[i] * math.Exp(reassignJitter*r.NormFloat64())
		}
		g.reassign = append(g.reassign, newPicker(mw))
	}
}

// memberPick draws a member of team t by weights, never the user not (-1: any).
func (g *generator) memberPick(t int, weights []float64, not int) int {
	m := g.members[t]
	w := make([]float64, len(m))
	for j, u := range m {
		if u != not {
			w[j] = weights[u]
		}
	}
	return m[newPicker(w).pick(g.r)]
}

// somebody draws a user who works on team t's projects: mostly its
// members, sometimes anyone (drawn from outside by the same weights).
func (g *generator) somebody(t int, weights []float64, outside picker) int {
	if g.r.Float64() < outsideTeamShare {
		return outside.pick(g.r)
	}
	return g.memberPick(t, weights, -1)
}

func (g *generator) tasks() {
	r, n := g.r, g.tier.Tasks
	projPick := newPicker(zipf(r, g.tier.Projects, projectTaskSkew))
	statusPick := newPicker(taskStatusWeights)
	prioPick := newPicker(priorityWeights)
	estPick := newPicker(estimateWeights)
	ones := make([]float64, len(g.d.Users))
	for i := range ones {
		ones[i] = 1
	}
	type draft struct {
		rec     TaskRecord
		proj    int
		created int64
	}
	drafts := make([]draft, n)
	for i := range drafts {
		p := projPick.pick(r)
		t := g.projTeam[p]
		created := createdFrom + r.Int64N(createdTo-createdFrom)
		status := TaskStatuses[statusPick.pick(r)]
		rec := TaskRecord{
			ProjectID:     g.d.Projects[p].ID,
			Title:         titleVerbs[r.IntN(len(titleVerbs))] + " " + titleAreas[r.IntN(len(titleAreas))] + " " + titleThings[r.IntN(len(titleThings))],
			Status:        status,
			Priority:      Priorities[prioPick.pick(r)],
			ReporterID:    g.d.Users[g.somebody(t, ones, g.anyone)].ID,
			CreatedAt:     formatTime(created),
			EstimateHours: estimateValues[estPick.pick(r)],
		}
		unassigned := unassignedOther
		if status == "todo" {
			unassigned = unassignedTodo
		}
		if r.Float64() >= unassigned {
			id := g.d.Users[g.memberPick(t, g.work, -1)].ID
			rec.AssigneeID = &id
		}
		if r.Float64() >= noDueDate {
			due := time.Unix(created, 0).UTC().AddDate(0, 0, 1+r.IntN(60)).Format(time.DateOnly)
			rec.DueDate = &due
		}
		drafts[i] = draft{rec: rec, proj: p, created: created}
	}
	// Task ids follow creation time.
	slices.SortStableFunc(drafts, func(a, b draft) int { return cmp.Compare(a.created, b.created) })
	for i, dr := range drafts {
		dr.rec.ID = fmt.Sprintf("K%05d", i+1)
		g.d.Tasks = append(g.d.Tasks, dr.rec)
		g.taskProj = append(g.taskProj, dr.proj)
		g.created = append(g.created, dr.created)
	}
}

// plan is one task's history before it has times: the statuses it went
// through, the assignees it had, and how many comments it got.
type plan struct {
	statuses  []string // todo, …, the task's status
	assignees []int    // user indices, the last one the assignee; empty when unassigned
	comments  int
}

// statusChain is the shortest way from todo to status.
func statusChain(status string) []string {
	switch status {
	case "todo":
		return []string{"todo"}
	case "in_progress":
		return []string{"todo", "in_progress"}
	case "review", "blocked":
		return []string{"todo", "in_progress", status}
	case "done":
		return []string{"todo", "in_progress", "review", "done"}
	}
	panic("datasets: unknown task status " + status)
}

// withDetours puts extra steps into a minimal chain just before its final
// part: a blocked episode after in_progress and review → in_progress
// bounces.
func withDetours(chain []string, blocked bool, bounces int) []string {
	if len(chain) < 2 {
		return chain
	}
	out := []string{"todo", "in_progress"}
	if blocked {
		out = append(out, "blocked", "in_progress")
	}
	for range bounces {
		out = append(out, "review", "in_progress")
	}
	return append(out, chain[2:]...)
}

func (g *generator) events() {
	r, d := g.r, g.d
	userIndex := make(map[string]int, len(d.Users))
	for i, u := range d.Users {
		userIndex[u.ID] = i
	}
	// Required: a created event and the shortest status chain per task.
	plans := make([]plan, len(d.Tasks))
	required := 0
	for i, t := range d.Tasks {
		plans[i].statuses = statusChain(t.Status)
		if t.AssigneeID != nil {
			plans[i].assignees = []int{userIndex[*t.AssigneeID]}
		}
		required += len(plans[i].statuses) // created + len-1 status changes
	}
	if required > g.tier.Events {
		panic(fmt.Sprintf("datasets: tier %q cannot fit: its %d tasks need at least %d events, the tier has %d",
			g.tier.Name, g.tier.Tasks, required, g.tier.Events))
	}
	budget := g.tier.Events - required
	// Detours and reassignments while the budget lasts.
	for i, t := range d.Tasks {
		p := &plans[i]
		blocked, bounces := false, 0
		switch t.Status {
		case "review", "done":
			blocked = r.Float64() < blockedEpisode
			if r.Float64() < bounceRate {
				bounces = 1
			}
		case "in_progress", "blocked":
			if r.Float64() < bounceRateOpen {
				bounces = 1
			}
		}
		if bounces > 0 && r.Float64() < doubleBounce {
			bounces = 2
		}
		if blocked && budget >= 2 {
			budget -= 2
		} else {
			blocked = false
		}
		bounces = min(bounces, budget/2)
		budget -= 2 * bounces
		p.statuses = withDetours(p.statuses, blocked, bounces)

		if len(p.assignees) == 1 && r.Float64() < reassignRate {
			n := []int{1, 1, 1, 1, 1, 2, 2, 2, 3, 3}[r.IntN(10)]
			n = min(n, budget)
			budget -= n
			team := g.projTeam[g.taskProj[i]]
			for range n { // walk back from the final assignee
				prev := g.memberPick(team, g.work, p.assignees[0])
				p.assignees = append([]int{prev}, p.assignees...)
			}
		}
	}
	// Comments fill the rest exactly; urgent work gets more talk.
	w := make([]float64, len(d.Tasks))
	for i, t := range d.Tasks {
		w[i] = priorityTalk[t.Priority]
	}
	taskPick := newPicker(w)
	for range budget {
		plans[taskPick.pick(r)].comments++
	}

	type timed struct {
		Event
		at   int64
		task int
		seq  int
	}
	all := make([]timed, 0, g.tier.Events)
	for i := range d.Tasks {
		for seq, e := range g.history(i, plans[i]) {
			all = append(all, timed{Event: e.Event, at: e.at, task: i, seq: seq})
		}
	}
	if len(all) != g.tier.Events {
		panic(fmt.Sprintf("datasets: made %d events, want %d", len(all), g.tier.Events))
	}
	slices.SortFunc(all, func(a, b timed) int {
		return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.task, b.task), cmp.Compare(a.seq, b.seq))
	})
	// Give every month with enough reassignments a clear top 3.
	byMonth := make([][]reassignment, monthIndex(eventsTo-1)+1)
	for k := range all {
		if e := &all[k]; e.Action == "reassigned" {
			m := monthIndex(e.at)
			byMonth[m] = append(byMonth[m], reassignment{actor: &e.UserID})
		}
	}
	for _, rs := range byMonth {
		g.clearTopThree(rs, userIndex)
	}
	d.Events = make([]Event, len(all))
	for i, e := range all {
		e.Event.ID = fmt.Sprintf("E%06d", i+1)
		e.Event.At = formatTime(e.at)
		d.Events[i] = e.Event
	}
}

type stamped struct {
	Event
	at int64
}

// history lays out one task's events: created, then status changes,
// reassignments and comments interleaved at random (each chain in its
// order), at strictly increasing times.
func (g *generator) history(i int, p plan) []stamped {
	r, d := g.r, g.d
	task := d.Tasks[i]
	proj := g.taskProj[i]
	team := g.projTeam[proj]
	lead := g.projLead[proj]
	nStatus, nReassign := len(p.statuses)-1, max(len(p.assignees)-1, 0)
	kinds := make([]byte, 0, nStatus+nReassign+p.comments)
	for range nStatus {
		kinds = append(kinds, 's')
	}
	for range nReassign {
		kinds = append(kinds, 'r')
	}
	for range p.comments {
		kinds = append(kinds, 'c')
	}
	r.Shuffle(len(kinds), func(a, b int) { kinds[a], kinds[b] = kinds[b], kinds[a] })

	// Times: gaps of a minute to a few days, squeezed when the window ends.
	gaps := make([]int64, len(kinds))
	var total int64
	for k := range gaps {
		gaps[k] = min(minGapSeconds+int64(r.ExpFloat64()*meanGapSeconds), maxGapSeconds)
		total += gaps[k]
	}
	t0 := g.created[i]
	if room := eventsTo - 1 - t0 - int64(len(gaps)); total > room {
		f := float64(room) / float64(total)
		for k := range gaps {
			gaps[k] = max(1, int64(float64(gaps[k])*f))
		}
	}

	out := make([]stamped, 0, len(kinds)+1)
	out = append(out, stamped{Event: Event{TaskID: task.ID, UserID: task.ReporterID, Action: "created"}, at: t0})
	current := -1 // assignee index into p.assignees
	if len(p.assignees) > 0 {
		current = 0
	}
	si, at := 0, t0
	for k, kind := range kinds {
		at += gaps[k]
		e := Event{TaskID: task.ID}
		switch kind {
		case 's':
			from, to := p.statuses[si], p.statuses[si+1]
			si++
			actor := lead
			if current >= 0 {
				actor = p.assignees[current]
			}
			if from == "review" { // the reviewer decides
				actor = lead
				if current >= 0 && actor == p.assignees[current] {
					actor = g.memberPick(team, g.work, actor)
				}
			}
			e.Action, e.UserID, e.From, e.To = "status_changed", d.Users[actor].ID, &from, &to
		case 'r':
			actor := lead
			if r.Float64() >= reassignByLead {
				actor = g.reassign[monthIndex(at)].pick(r)
			}
			from, to := d.Users[p.assignees[current]].ID, d.Users[p.assignees[current+1]].ID
			current++
			e.Action, e.UserID, e.From, e.To = "reassigned", d.Users[actor].ID, &from, &to
		case 'c':
			e.Action, e.UserID = "commented", d.Users[g.somebody(team, g.comment, g.commenters)].ID
		}
		out = append(out, stamped{Event: e, at: at})
	}
	return out
}

// monthIndex counts months from January 2025 (0).
func monthIndex(unix int64) int {
	t := time.Unix(unix, 0).UTC()
	return (t.Year()-2025)*12 + int(t.Month()) - 1
}

func formatTime(unix int64) string {
	return time.Unix(unix, 0).UTC().Format(time.RFC3339)
}

// reassignment is a reassigned event whose actor clearTopThree may change.
type reassignment struct{ actor *string } // the event's user_id

// clearTopThree makes the three users with the most reassignments in rs
// distinct in count and ahead of everyone else, so that "the 3 users who
// reassigned most" has one answer. It settles each tie by handing one
// event at a time to the higher-placed user, taken from the tail (someone
// who reassigned least) when there is one: the busiest get a little
// busier. A month too quiet for that (fewer than six reassignments) keeps
// its ties.
func (g *generator) clearTopThree(rs []reassignment, userIndex map[string]int) {
	nu := len(g.d.Users)
	if len(rs) < 6 || nu < 4 {
		return
	}
	count := make([]int, nu)
	events := make([][]int, nu) // user → indices into rs
	for k, x := range rs {
		u := userIndex[*x.actor]
		count[u]++
		events[u] = append(events[u], k)
	}
	order := make([]int, nu)
	for u := range order {
		order[u] = u
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(count[b], count[a]) })
	a, b, c := order[0], order[1], order[2]
	rest := order[3:]
	move := func(from, to int) {
		k := events[from][len(events[from])-1]
		events[from] = events[from][:len(events[from])-1]
		count[from]--
		events[to] = append(events[to], k)
		count[to]++
		*rs[k].actor = g.d.Users[to].ID
	}
	// tail is the rest user with the fewest reassignments but at least
	// one, busiest the one with the most; -1 when the rest have none.
	tail := func() int {
		t := -1
		for _, u := range rest {
			if count[u] > 0 && (t < 0 || count[u] < count[t]) {
				t = u
			}
		}
		return t
	}
	busiest := func() int {
		t := rest[0]
		for _, u := range rest {
			if count[u] > count[t] {
				t = u
			}
		}
		return t
	}
	for range 2 * len(rs) {
		switch {
		case count[a] <= count[b]:
			from := tail()
			if from < 0 {
				from = c
			}
			move(from, a)
		case count[b] <= count[c]:
			from := tail()
			if from < 0 {
				from = c
			}
			move(from, b)
		case count[c] <= count[busiest()]:
			if count[busiest()] == 0 {
				return // c has none: too few events
			}
			move(busiest(), c)
		default:
			return
		}
	}
}
