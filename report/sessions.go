package report

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/ctxcode/ctxcode/bench"
)

// The figures of staged workloads (issue 24): a session trial asks its
// stages' questions one after another in one conversation and one kernel,
// and its line holds each stage (bench.StageFigures). For each (run,
// model, condition) with session trials, stage by stage:
//
//   - accuracy at stage k: the share of sessions whose stage k was right,
//     a session that ended before k counting as not right;
//   - W(n): the mean cumulative input tokens at stage n, over the sessions
//     that reached n (those that ended before are left out, and counted);
//   - CC_q(n) for q = 0.8 and 0.95 in each resource (ccn.go): the smallest
//     budget with which a share q of sessions passes every check of
//     stages 1..n, by Kaplan–Meier, cut sessions censored.
//
// Sessions of class infra are left out of all three. Every interval is
// over sessions (a session's reps, when it has several, are drawn
// together, as a task's are in the ladder): accuracy is Wilson's over
// sessions (TaskAccuracy's when sessions have reps), W(n) Describe's, CC a cluster bootstrap of BudgetQuantile. A run without
// session trials has no Sessions, and its report is as it was.

// Sessions are the session figures of a report: one row per (run, model,
// condition) with session trials, each with MaxStage stages.
type Sessions struct {
	MaxStage int `json:"max_stage"`
	// Q are the shares CC is given for, Resources the resources it is
	// measured in (CCFigure.Resource).
	Q         []float64    `json:"q"`
	Resources []string     `json:"resources"`
	Rows      []SessionRow `json:"rows"`
}

// SessionRow is one (run, model, condition)'s sessions.
type SessionRow struct {
	Run       int    `json:"run"` // index in Report.Runs
	Model     string `json:"model"`
	Condition string `json:"condition"`
	// Context is the context policy its sessions ran under (bench.Trial's
	// Context, "none" for none; several joined with ", ").
	Context string `json:"context_policy"`
	// Sessions counts its session trials with a model result (the
	// denominator of every figure); Infra those left out.
	Sessions int        `json:"sessions"`
	Infra    int        `json:"infra"`
	Stages   []StageRow `json:"stages"`
}

// StageRow is stage n of a SessionRow.
type StageRow struct {
	Stage int `json:"stage"` // n, from 1
	// Correct counts the sessions whose stage n was right; Accuracy is
	// Correct of SessionRow.Sessions with its interval over sessions.
	Correct  int      `json:"correct"`
	Accuracy Interval `json:"accuracy"`
	// Reached counts the sessions with a stage n; W is W(n), their
	// cumulative input tokens at n; EndedBefore = Sessions - Reached are
	// left out of W.
	Reached     int  `json:"reached"`
	EndedBefore int  `json:"ended_before"`
	W           Dist `json:"cumulative_input_tokens"`
	// Passed counts the sessions that passed every check of stages 1..n
	// (CC's events), BudgetCut those cut by a budget at or before n
	// (censored where they were cut), Failed those that failed a check
	// (never pass).
	Passed    int        `json:"passed"`
	BudgetCut int        `json:"budget_cut"`
	Failed    int        `json:"failed"`
	CC        []CCFigure `json:"cc"`
}

// CCFigure is CC_q(n) in one resource: Budget, the smallest budget with
// which a share Q of the sessions passes stages 1..n, with a percentile
// bootstrap 95% interval over sessions. +Inf is "not reached" (JSON
// null): the estimated passed share never reaches Q (Budget), or did not
// in that tail of the resamples (Lo, Hi). Sessions is how many sessions it
// is over; below two there is no interval (lo and hi null).
type CCFigure struct {
	Resource string  `json:"resource"`
	Q        float64 `json:"q"`
	Budget   float64 `json:"budget"`
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Sessions int     `json:"sessions"`
}

// MarshalJSON writes a budget not reached as null, and lo and hi as null
// over fewer than two sessions.
func (c CCFigure) MarshalJSON() ([]byte, error) {
	fin := func(v float64) *float64 {
		if math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	lo, hi := fin(c.Lo), fin(c.Hi)
	if c.Sessions < 2 {
		lo, hi = nil, nil
	}
	return json.Marshal(struct {
		Resource string   `json:"resource"`
		Q        float64  `json:"q"`
		Budget   *float64 `json:"budget"`
		Lo       *float64 `json:"lo"`
		Hi       *float64 `json:"hi"`
		Sessions int      `json:"sessions"`
	}{c.Resource, c.Q, fin(c.Budget), lo, hi, c.Sessions})
}

// Reached says the budget is reached (finite).
func (c CCFigure) Reached() bool { return !math.IsInf(c.Budget, 1) }

// ccQ are the shares CC is given for.
var ccQ = []float64{0.8, 0.95}

// ccResources are the resources CC is measured in, by their names in
// JSON, with their labels and their values in a stage's use.
var ccResources = []struct {
	name, label string
	of          func(bench.StageUse) int
}{
	{"input_tokens", "input tokens", func(u bench.StageUse) int { return u.InputTokens }},
	{"output_tokens", "output tokens", func(u bench.StageUse) int { return u.OutputTokens }},
	{"calls", "calls", func(u bench.StageUse) int { return u.Calls }},
	{"tool_result_bytes", "tool-result bytes", func(u bench.StageUse) int { return u.ToolResultBytes }},
}

// isSession says trial t is a session's.
func isSession(t bench.Trial) bool { return t.Session != "" || len(t.Stages) > 0 }

// stageOf is stage k of session t.
func stageOf(t bench.Trial, k int) (bench.StageFigures, bool) {
	for _, s := range t.Stages {
		if s.Stage == k {
			return s, true
		}
	}
	return bench.StageFigures{}, false
}

// stageBudgetStop says stage s ended because a budget ran out: the
// statuses of bench.Trial.BudgetStop.
func stageBudgetStop(s bench.StageFigures) bool { return bench.Trial{Status: s.Status}.BudgetStop() }

// outcome is how a session stands at stage n for CC.
type outcome int

const (
	passed outcome = iota // every check of stages 1..n passed: an event
	cut                   // cut by a budget at or before n, no check failed before: censored
	failed                // a check failed: never passes
)

// sessionOutcome is how session t stands at stage n, and its cumulative
// use at n (passed) or at the stage where it was cut (cut). Its stages are
// taken in order: the first that was not right decides, as a cut when a
// budget stopped it, else as a failure; a session whose stages end before
// n without one is cut at its last stage when the trial ended on a budget
// (bench.Trial.BudgetStop), else failed.
func sessionOutcome(t bench.Trial, n int) (outcome, bench.StageUse) {
	var last bench.StageUse
	for k := 1; k <= n; k++ {
		s, ok := stageOf(t, k)
		switch {
		case !ok && t.BudgetStop():
			return cut, last
		case !ok:
			return failed, last
		case s.Correct:
			last = s.Cumulative
		case stageBudgetStop(s):
			return cut, s.Cumulative
		default:
			return failed, s.Cumulative
		}
	}
	return passed, last
}

// buildSessions are the session figures of runs' rows, nil when no run
// has a session trial. Each row's bootstraps draw from a generator of
// their own, so that the report's other figures stay as they were.
func buildSessions(runs []*Run, rows []Row) *Sessions {
	maxStage := 0
	for _, r := range runs {
		for _, t := range r.Final {
			if !isSession(t) {
				continue
			}
			for _, s := range t.Stages {
				maxStage = max(maxStage, s.Stage)
			}
		}
	}
	if maxStage == 0 && !slices.ContainsFunc(runs, func(r *Run) bool { return slices.ContainsFunc(r.Final, isSession) }) {
		return nil
	}
	ss := &Sessions{MaxStage: maxStage, Q: ccQ, Rows: []SessionRow{}}
	for _, res := range ccResources {
		ss.Resources = append(ss.Resources, res.name)
	}
	for _, row := range rows {
		var trials []bench.Trial
		for _, t := range runs[row.Run].Final {
			if t.Model == row.Model && t.Condition == row.Condition && isSession(t) {
				trials = append(trials, t)
			}
		}
		if len(trials) > 0 {
			ss.Rows = append(ss.Rows, sessionRow(row.Run, row.Model, row.Condition, trials, maxStage))
		}
	}
	return ss
}

// sessionRow is the SessionRow of one (run, model, condition)'s session
// trials, over stages 1..maxStage.
func sessionRow(run int, model, cond string, trials []bench.Trial, maxStage int) SessionRow {
	sr := SessionRow{Run: run, Model: model, Condition: cond, Stages: []StageRow{}}
	var graded []bench.Trial
	var policies []string
	for _, t := range trials {
		if t.Class == bench.ClassInfra {
			sr.Infra++
			continue
		}
		graded = append(graded, t)
		p := t.Context
		if p == "" {
			p = "none"
		}
		if !slices.Contains(policies, p) {
			policies = append(policies, p)
		}
	}
	slices.Sort(policies)
	sr.Context = strings.Join(policies, ", ")
	sr.Sessions = len(graded)
	// A session's reps are one cluster: the groups number the sessions'
	// names in sorted order, so that the draws do not depend on the log's.
	var names []string
	for _, t := range graded {
		names = append(names, t.Task)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	groups := make([]int, len(graded))
	for i, t := range graded {
		groups[i], _ = slices.BinarySearch(names, t.Task)
	}
	rng := NewRand(Seed)
	for n := 1; n <= maxStage; n++ {
		st := StageRow{Stage: n, CC: []CCFigure{}}
		correct := make([]bool, len(graded))
		var w []float64
		var wGroups []int
		outcomes := make([]outcome, len(graded))
		uses := make([]bench.StageUse, len(graded))
		for i, t := range graded {
			if s, ok := stageOf(t, n); ok {
				correct[i] = s.Correct
				w = append(w, float64(s.Cumulative.InputTokens))
				wGroups = append(wGroups, groups[i])
			}
			if correct[i] {
				st.Correct++
			}
			outcomes[i], uses[i] = sessionOutcome(t, n)
			switch outcomes[i] {
			case passed:
				st.Passed++
			case cut:
				st.BudgetCut++
			default:
				st.Failed++
			}
		}
		st.Reached, st.EndedBefore = len(w), len(graded)-len(w)
		st.Accuracy = stageAccuracy(correct, groups, len(names))
		st.W = Describe(w, wGroups, rng, Resamples)
		st.CC = ccFigures(outcomes, uses, groups, len(names), rng, Resamples)
		sr.Stages = append(sr.Stages, st)
	}
	return sr
}

// stageAccuracy is the share of correct sessions with its interval over
// sessions: Wilson's when each session has one trial (the sessions are
// the independent units), else TaskAccuracy's, whose effective number of
// sessions counts a session's reps once. TaskAccuracy draws from a
// generator of its own, so that the row's W(n) and CC draw the same
// whether sessions have reps or not.
func stageAccuracy(correct []bool, groups []int, sessions int) Interval {
	if sessions < len(correct) {
		return TaskAccuracy(correct, groups, NewRand(Seed), Resamples)
	}
	k := 0
	for _, c := range correct {
		if c {
			k++
		}
	}
	iv := Wilson(k, len(correct))
	if iv.Tasks < 2 { // as TaskAccuracy: no interval over fewer than two
		iv.Lo, iv.Hi = iv.Est, iv.Est
	}
	return iv
}

// ccFigures are CC_q at one stage, for every resource and q: sessions'
// outcomes and uses (sessionOutcome's), groups[i] session i's cluster (of
// clusters). The interval is a percentile bootstrap that draws clusters
// with replacement (resamples draws, one set of draws for every resource
// and q); a draw whose passed share never reaches q is +Inf.
func ccFigures(outcomes []outcome, uses []bench.StageUse, groups []int, clusters int, rng *rand.Rand, resamples int) []CCFigure {
	times := func(res int, idx []int) ([]float64, []bool) {
		ts, ev := make([]float64, len(idx)), make([]bool, len(idx))
		for j, i := range idx {
			switch outcomes[i] {
			case failed:
				ts[j] = math.Inf(1)
			default:
				ts[j] = float64(ccResources[res].of(uses[i]))
				ev[j] = outcomes[i] == passed
			}
		}
		return ts, ev
	}
	all := make([]int, len(outcomes))
	for i := range all {
		all[i] = i
	}
	var figs []CCFigure
	for res := range ccResources {
		ts, ev := times(res, all)
		for _, q := range ccQ {
			b, _ := BudgetQuantile(ts, ev, q)
			figs = append(figs, CCFigure{Resource: ccResources[res].name, Q: q, Budget: b, Lo: b, Hi: b, Sessions: clusters})
		}
	}
	if clusters < 2 {
		return figs
	}
	members := make([][]int, clusters)
	for i, g := range groups {
		members[g] = append(members[g], i)
	}
	draws := make([][]float64, len(figs))
	idx := make([]int, 0, len(outcomes))
	for range resampleCount(resamples) {
		idx = idx[:0]
		for range clusters {
			idx = append(idx, members[rng.IntN(clusters)]...)
		}
		f := 0
		for res := range ccResources {
			ts, ev := times(res, idx)
			for _, q := range ccQ {
				b, _ := BudgetQuantile(ts, ev, q)
				draws[f] = append(draws[f], b)
				f++
			}
		}
	}
	for f := range figs {
		figs[f].Lo, figs[f].Hi = percentile95(draws[f])
	}
	return figs
}

// The texts that say how the session figures were made, the same on both
// pages.
const (
	sessionsMethod = "Each session asks its stages' questions one after another in one conversation and one kernel. " +
		"Sessions that failed in the harness (infra) are left out of every figure here. " +
		"Intervals are over sessions (the reps of one session drawn together)."
	stageAccuracyMethod = "The share of sessions whose stage k was right, with a Wilson 95% interval over sessions as in the ladder. " +
		"A session that ended before stage k (cut by a budget) counts as not right at k."
	wnMethod = "W(n): the mean input tokens of stages 1..n together (the prompts of all their model calls, summed), " +
		"with a bootstrap 95% interval over sessions, over the sessions that reached stage n; " +
		"a session that ended before stage n is left out at n (how many, in parentheses)."
	ccMethod = "CC_q(n): the smallest budget of a resource with which a share q of sessions passes every check of stages 1..n, " +
		"estimated by Kaplan–Meier with the resource (summed over stages 1..n) in the place of time: " +
		"a session that passed stages 1..n counts at its use at n; " +
		"one cut by a budget (max_turns, max_prompt_tokens, context_length_exceeded) at or before n, with no wrong stage before, is censored at its use where it was cut (it might have passed with more); " +
		"one with a wrong or unanswered stage never passes (censored at +∞). " +
		"\"not reached\": the estimated share that passes never reaches q. " +
		"In brackets, a percentile bootstrap 95% interval over sessions; an end that its resamples do not reach prints as not reached. " +
		"The first line of each condition counts its sessions at each n: passed / cut by a budget / failed."
)

// notReached stands for a budget the passed share never reaches.
const notReached = "not reached"

// budgetText is a CC budget: a whole number, or notReached.
func budgetText(v float64) string {
	if math.IsInf(v, 1) {
		return notReached
	}
	return fmt.Sprintf("%.0f", v)
}

// ccParts are a CC figure's text in two parts: the budget, and its
// interval's bounds ("" when the budget and both bounds are not reached,
// noInterval over fewer than two sessions).
func ccParts(c CCFigure) (est, ci string) {
	est = budgetText(c.Budget)
	switch {
	case c.Sessions < 2:
		return est, noInterval
	case !c.Reached() && math.IsInf(c.Lo, 1):
		return est, ""
	}
	return est, budgetText(c.Lo) + ", " + budgetText(c.Hi)
}

func ccText(c CCFigure) string {
	est, ci := ccParts(c)
	if ci == "" {
		return est
	}
	return est + " [" + ci + "]"
}

// wParts are W(n)'s text in two parts: the mean and its interval's
// bounds, and what was left out ("" for none); "–" with no session.
func wParts(s StageRow) (mean, ci, left string) {
	if s.EndedBefore > 0 {
		left = fmt.Sprintf("%d left out", s.EndedBefore)
	}
	if s.W.N == 0 {
		return "–", "", left
	}
	return fmt.Sprintf("%.0f", s.W.Mean), bracket(s.W.Tasks, "%.0f", s.W.Lo, s.W.Hi), left
}

func wText(s StageRow) string {
	mean, ci, left := wParts(s)
	t := mean
	if ci != "" {
		t += " [" + ci + "]"
	}
	if left != "" {
		t += " (" + left + ")"
	}
	return t
}

// countsText is how a stage's sessions stand for CC: passed / cut / failed.
func countsText(s StageRow) string {
	return fmt.Sprintf("%d / %d / %d", s.Passed, s.BudgetCut, s.Failed)
}

// sessionLabels are the first cells of a session row in a table: run
// (with two runs), model, condition.
func sessionLabels(r SessionRow, many bool) []string {
	cells := []string{r.Model, r.Condition}
	if many {
		cells = append([]string{fmt.Sprint(r.Run + 1)}, cells...)
	}
	return cells
}

// sessionsMarkdown writes the session section of a report that has one.
func sessionsMarkdown(b *strings.Builder, rep *Report) {
	ss := rep.Sessions
	if ss == nil {
		return
	}
	many := len(rep.Runs) > 1
	lead := []string{"model", "condition"}
	if many {
		lead = append([]string{"run"}, lead...)
	}
	stages := func(prefix string) []string {
		var h []string
		for n := 1; n <= ss.MaxStage; n++ {
			h = append(h, fmt.Sprintf("%s%d", prefix, n))
		}
		return h
	}
	b.WriteString("\n## Sessions, stage by stage\n\n")
	b.WriteString(sessionsMethod + "\n")
	if ss.MaxStage == 0 {
		b.WriteString("\nNo session trial has a stage yet.\n")
		return
	}

	b.WriteString("\n### Accuracy by stage\n\n")
	b.WriteString(stageAccuracyMethod + "\n\n")
	head := append(slices.Clone(lead), "context", "sessions", "infra")
	head = append(head, stages("stage ")...)
	table(b, head, len(head))
	for _, r := range ss.Rows {
		cells := append(sessionLabels(r, many), r.Context, fmt.Sprint(r.Sessions), fmt.Sprint(r.Infra))
		for _, s := range r.Stages {
			cells = append(cells, accuracy(s.Correct, r.Sessions, s.Accuracy))
		}
		row(b, cells)
	}

	b.WriteString("\n### W(n), cumulative input tokens\n\n")
	b.WriteString(wnMethod + "\n\n")
	head = append(slices.Clone(lead), stages("n = ")...)
	table(b, head, len(head))
	for _, r := range ss.Rows {
		cells := sessionLabels(r, many)
		for _, s := range r.Stages {
			cells = append(cells, wText(s))
		}
		row(b, cells)
	}

	b.WriteString("\n### CC_q(n), the budget a share q of sessions needs\n\n")
	b.WriteString(ccMethod + "\n\n")
	head = append(slices.Clone(lead), "resource", "q")
	head = append(head, stages("n = ")...)
	table(b, head, len(head))
	for _, r := range ss.Rows {
		cells := append(sessionLabels(r, many), "passed / cut / failed", "")
		for _, s := range r.Stages {
			cells = append(cells, countsText(s))
		}
		row(b, cells)
		for f := range len(ccResources) * len(ccQ) {
			cells := append(sessionLabels(r, many), ccResources[f/len(ccQ)].label, fmt.Sprintf("%.2f", ccQ[f%len(ccQ)]))
			for _, s := range r.Stages {
				cells = append(cells, ccText(s.CC[f]))
			}
			row(b, cells)
		}
	}
}
