package report

// The HTML page (report.html): one self-contained file that needs nothing
// but a browser. Its CSS and the ladder chart's SVG are inline; it has no
// JavaScript (transcripts fold with <details>) and fetches nothing: no
// fonts, no stylesheets, no images. It is written with html/template, so
// every text of the run (model messages, code, cell output, answers, task
// questions, names) is escaped where it lands.
//
// The page, top to bottom:
//
//  1. the run header(s), as in the Markdown;
//  2. the ladder table: the Markdown's numbers, in the Markdown's formats
//     (the same helpers' precisions; html_test.go checks the text against
//     them), with the intervals in a quieter colour;
//  3. the ladder chart (ladderChart): per row of the ladder, the accuracy
//     with its interval over tasks at the top, one bar of mean context tokens
//     in the upper panel and one of mean output tokens in the lower panel,
//     each panel on its own scale, each bar with the bootstrap 95% interval
//     as a whisker. Every bar is a
//     <rect class="bar bar-context"> or "bar bar-output" with data-run,
//     data-model and data-condition, so that tests (and readers' tools)
//     can find them;
//  4. the accuracy–cost plot (accCostChart, plot.go): a point per row of
//     the ladder, x its mean context tokens, y its accuracy, each with its
//     interval as an error bar;
//  5. the attribution, every condition against the baseline, and the second
//     run against the first, when the report has them (with two runs, the
//     first two are of the first run only, and their titles say so), each
//     table followed by the pairs it dropped and its power note;
//  6. the per-task table of each run: correct of the reps, mean turns,
//     mean context tokens, and a link per rep to its transcript;
//  7. the notes;
//  8. the transcripts, grouped by task: a <details id="t-NAME"> per trial,
//     NAME its trajectory file's name without ".jsonl" ("t-2~NAME" for the
//     second run's), folded, its summary line the task, condition, rep,
//     verdict, turns and tokens, and a link to the trial's notebook when
//     the report has them (Options.Notebooks; the first run's only).
//     Opened, it shows the trial's line of trials.jsonl (what counts),
//     then its trajectory as it was written: the question and set-up,
//     each model call (its cost, and the model's words where the code
//     cells do not already show them), each cell as In/Out blocks (the
//     code as it ran, or condition A's bash command or read arguments; the
//     output as the model read it, with the harness's "[ctxcode: ...]"
//     notes marked), restarts (each after the cell whose code killed the
//     kernel), the answer and its source, the end and the grade. The
//     trajectory is read with session.ReadTrajectory: what it passed over
//     (an unknown field or event kind, a last line cut short) is said in
//     a line each after the events; a line that is not an event shows
//     the events before it and the reader's error, naming the line; a
//     trajectory that is missing, unreadable or outside the run directory
//     (Run.ReadTrajectory) is said so in a line. The page is still
//     written.
//
// The numbers are the Report's: nothing here computes a statistic. The
// helpers only format, lay out the chart, and read trajectories.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/ctxcode/ctxcode/bench"
	"github.com/ctxcode/ctxcode/session"
)

// HTML writes rep as one self-contained page; runs are the run directories
// rep was built from (for the transcripts: nil leaves them out). The page's
// links to notebooks are those of a page in the first run's directory
// (HTMLAt for one elsewhere).
func HTML(w io.Writer, rep *Report, runs []*Run) error {
	return HTMLAt(w, rep, runs, ".")
}

// HTMLAt is HTML for a page written elsewhere: runLink is the path from the
// page's folder to the first run's directory (slash-separated, or
// absolute), for the link of each of its trials to its notebook
// (TaskCell.Notebooks, with Options.Notebooks).
func HTMLAt(w io.Writer, rep *Report, runs []*Run, runLink string) error {
	p := newHTMLPage(rep, runs, runLink)
	var b bytes.Buffer
	if err := htmlTemplate.Execute(&b, p); err != nil {
		return fmt.Errorf("render report.html: %w", err)
	}
	_, err := w.Write(bench.Stamp(b.Bytes()))
	return err
}

// htmlPage is what the template renders: the Report, and what the page
// adds to it (the chart's geometry, anchors, transcripts).
type htmlPage struct {
	Rep         *Report
	Heads       []htmlRunHead
	ManyRuns    bool
	Money       bool
	Estimated   bool
	Chart       htmlChart
	AccCost     htmlAccCost
	Sessions    *htmlSessions // nil for a run without session trials
	Titles      titles
	TaskTables  []htmlTaskTable // the first run's, then the second's
	Transcripts []htmlTranscripts
}

type htmlRunHead struct {
	Label string
	RunInfo
}

type htmlTaskRow struct {
	Task, Question, Anchor string
	Cells                  []htmlTaskCell
}

type htmlTaskCell struct {
	Class string // all, some, none, nores: how many reps were correct
	Text  string
	Infra int
	Links []htmlLink
}

type htmlLink struct{ Label, Href string }

// htmlTranscripts are one run's transcripts, grouped by task.
type htmlTranscripts struct {
	Label  string
	Groups []htmlTaskGroup
}

type htmlTaskGroup struct {
	Task, Question, Anchor string
	Trials                 []*htmlTrial
}

// htmlTrial is one trial: its line of trials.jsonl and its trajectory.
type htmlTrial struct {
	ID, Task, Model, Condition string
	ShowModel                  bool // the run has several models
	Rep, Attempt               int
	Verdict, VerdictClass      string
	Turns, Context, Output     int
	Status, Answer, Source     string
	Reason, Error              string
	Infra, Budget              bool
	WallMS, KernelMS, ModelMS  int64
	Restarts, Retries          int
	Trajectory                 string
	Notebook                   string // the link to its notebook, "" for none
	Missing                    string // why the trajectory is not shown
	Steps                      []htmlStep
}

// htmlStep is one thing that happened in a trial; exactly one field is set.
type htmlStep struct {
	Setup   *htmlSetup
	Turn    *htmlTurn
	Cell    *htmlCell
	Restart *session.RestartEvent
	Outcome *htmlOutcome
	Note    string
}

// htmlOutcome is how a run ended: its answer, end and grade events, shown
// together.
type htmlOutcome struct {
	Answer *session.AnswerEvent
	End    *session.EndEvent
	Grade  *session.GradeEvent
}

type htmlSetup struct {
	Question, Condition, Protocol, Model string
	Prefix, PrefixSource                 string
	PrefixCells, SkillBytes              int
	HasSkill                             bool
	Built                                *session.PrefixEvent
}

type htmlTurn struct {
	*session.CallEvent
	Message   string             // the model's words, shown
	Written   string             // the message as written, when the harness changed it (folded)
	ToolCalls []session.ToolCall // the calls no cell served
}

type htmlCell struct {
	Label, In string
	Out       []htmlSeg
	Class     string
	Meta      []string
}

type htmlSeg struct {
	Text string
	Note bool
}

func newHTMLPage(rep *Report, runs []*Run, runLink string) *htmlPage {
	p := &htmlPage{Rep: rep, ManyRuns: len(rep.Runs) > 1}
	for i, r := range rep.Runs {
		label := "Run"
		if p.ManyRuns {
			label = fmt.Sprintf("Run %d", i+1)
		}
		p.Heads = append(p.Heads, htmlRunHead{label, r})
	}
	for _, r := range rep.Rows {
		p.Money = p.Money || r.Money != nil
		p.Estimated = p.Estimated || r.Estimated
	}
	p.Chart = ladderChart(rep)
	p.AccCost = accCostChart(rep)
	p.Sessions = sessionsHTML(rep)
	anchors := newHTMLAnchors()
	// The first run's notebooks, by trajectory (rep.Tasks is of that run).
	notebooks := map[string]string{}
	for _, t := range rep.Tasks {
		for _, c := range t.Cells {
			for i, nb := range c.Notebooks {
				if i < len(c.Trials) && nb != "" {
					notebooks[c.Trials[i]] = path.Join(runLink, nb)
				}
			}
		}
	}
	for i, r := range runs {
		label := ""
		if len(runs) > 1 {
			label = fmt.Sprintf("Run %d: %s", i+1, r.Dir)
		}
		var nbs map[string]string
		if i == 0 {
			nbs = notebooks
		}
		p.Transcripts = append(p.Transcripts, htmlTranscripts{Label: label, Groups: transcriptGroups(i, r, anchors, nbs)})
	}
	p.Titles = sectionTitles(rep)
	for run, tasks := range [][]TaskRow{rep.Tasks, rep.SecondTasks} {
		if len(tasks) > 0 {
			p.TaskTables = append(p.TaskTables, taskTable(rep, run, tasks, anchors, run < len(runs)))
		}
	}
	return p
}

// htmlTaskTable is the per-task table of one run.
type htmlTaskTable struct {
	ID, Title string
	Linked    bool // each rep links to its transcript
	Head      []string
	Rows      []htmlTaskRow
}

// taskTable is the per-task table of run (from 0); linked says the page
// holds the run's transcripts, for each rep to link to its own.
func taskTable(rep *Report, run int, tasks []TaskRow, anchors *htmlAnchors, linked bool) htmlTaskTable {
	tt := htmlTaskTable{ID: "tasks", Title: sectionTitles(rep).tasks[run], Linked: linked}
	if run > 0 {
		tt.ID = fmt.Sprintf("tasks-%d", run+1)
	}
	for _, c := range tasks[0].Cells {
		tt.Head = append(tt.Head, cellLabel(c, rep, run))
	}
	for _, t := range tasks {
		row := htmlTaskRow{Task: t.Task, Question: t.Question, Anchor: anchors.task(run, t.Task)}
		for _, c := range t.Cells {
			cell := htmlTaskCell{Infra: c.Infra}
			switch {
			case c.Reps == 0:
				cell.Class, cell.Text = "nores", "no result"
			case c.Correct == c.Reps:
				cell.Class = "all"
			case c.Correct == 0:
				cell.Class = "none"
			default:
				cell.Class = "some"
			}
			if c.Reps > 0 {
				cell.Text = fmt.Sprintf("%d/%d · %.1f turns · %.0f", c.Correct, c.Reps, c.Turns, c.Context)
			}
			for i, tr := range c.Trials {
				if !linked {
					break // no transcripts to link to
				}
				cell.Links = append(cell.Links, htmlLink{fmt.Sprintf("r%d", i+1), "#" + anchors.trial(run, tr)})
			}
			row.Cells = append(row.Cells, cell)
		}
		tt.Rows = append(tt.Rows, row)
	}
	return tt
}

// htmlAnchors names the page's anchors: a trial's is "t-" and its
// trajectory file's name (safe already: bench.TrajectoryPath keeps
// letters, digits, ".", "-" and "_"), "t-2~" for the second run's (no
// file name has a "~"), made unique should two paths clean to one name.
type htmlAnchors struct {
	byPath map[string]string
	used   map[string]bool
}

func newHTMLAnchors() *htmlAnchors {
	return &htmlAnchors{byPath: map[string]string{}, used: map[string]bool{}}
}

var unsafeAnchor = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func (a *htmlAnchors) trial(run int, trajectory string) string {
	key := strconv.Itoa(run) + "\x00" + trajectory
	if id, ok := a.byPath[key]; ok {
		return id
	}
	name := strings.TrimSuffix(path.Base(filepath.ToSlash(trajectory)), ".jsonl")
	id := "t-" + unsafeAnchor.ReplaceAllString(name, "_")
	if run > 0 {
		id = fmt.Sprintf("t-%d~%s", run+1, id[2:])
	}
	for n, base := 2, id; a.used[id]; n++ {
		id = fmt.Sprintf("%s~%d", base, n)
	}
	a.used[id] = true
	a.byPath[key] = id
	return id
}

func (a *htmlAnchors) task(run int, task string) string {
	id := "task-" + unsafeAnchor.ReplaceAllString(task, "_")
	if run > 0 {
		id = fmt.Sprintf("task-%d~%s", run+1, id[5:])
	}
	return id
}

// transcriptGroups are run r's trials grouped by task, in the task list's
// order, and within a task in the ladder's order (model, condition, rep);
// notebooks are the links to their notebooks, by trajectory.
func transcriptGroups(run int, r *Run, anchors *htmlAnchors, notebooks map[string]string) []htmlTaskGroup {
	byKey := map[bench.Key]bench.Trial{}
	for _, t := range r.Final {
		byKey[t.Key] = t
	}
	shown := map[bench.Key]bool{}
	var groups []htmlTaskGroup
	for _, task := range r.Spec.TaskList {
		g := htmlTaskGroup{Task: task.ID, Question: task.Question, Anchor: anchors.task(run, task.ID)}
		for _, m := range r.Spec.Models {
			for _, c := range r.Spec.Conditions {
				for rep := 1; rep <= r.Spec.Reps; rep++ {
					k := bench.Key{Model: m.Name, Condition: c.Name, Task: task.ID, Rep: rep}
					if t, ok := byKey[k]; ok {
						g.Trials = append(g.Trials, htmlTrialOf(run, r, t, anchors, notebooks))
						shown[k] = true
					}
				}
			}
		}
		if len(g.Trials) > 0 {
			groups = append(groups, g)
		}
	}
	// Lines of keys the spec does not list (a log edited by hand) are shown
	// too, after the rest.
	var other []*htmlTrial
	for _, t := range r.Final {
		if !shown[t.Key] {
			other = append(other, htmlTrialOf(run, r, t, anchors, notebooks))
		}
	}
	if len(other) > 0 {
		groups = append(groups, htmlTaskGroup{Task: "other trials", Anchor: anchors.task(run, "~other"), Trials: other})
	}
	return groups
}

func htmlTrialOf(run int, r *Run, t bench.Trial, anchors *htmlAnchors, notebooks map[string]string) *htmlTrial {
	h := &htmlTrial{ID: anchors.trial(run, t.Trajectory), Task: t.Task, Model: t.Model, Condition: t.Condition,
		Rep: t.Rep, Attempt: t.Attempt, Verdict: t.Verdict, Turns: t.Turns, Context: t.ContextTokens,
		Output: t.OutputTokens, Status: string(t.Status), Source: t.AnswerSource, Reason: t.GradeReason,
		Error: t.Error, Infra: t.Class == bench.ClassInfra, Budget: t.BudgetStop(), WallMS: t.WallMS,
		KernelMS: t.KernelMS, ModelMS: t.ModelMS, Restarts: t.Restarts, Retries: t.Retries, Trajectory: t.Trajectory}
	if len(t.Answer) > 0 && string(t.Answer) != "null" {
		h.Answer = string(t.Answer)
	}
	h.VerdictClass = "v-" + unsafeAnchor.ReplaceAllString(t.Verdict, "_")
	if h.Infra {
		h.Verdict, h.VerdictClass = "infra", "v-infra"
	}
	h.ShowModel = len(r.Spec.Models) > 1
	if t.Trajectory != "" {
		h.Notebook = notebooks[t.Trajectory]
	}
	h.Steps, h.Missing = readTranscript(r, t)
	return h
}

// readTranscript reads trial t's trajectory into steps; missing says why
// there are none ("" when there are).
func readTranscript(r *Run, t bench.Trial) (steps []htmlStep, missing string) {
	rel := t.Trajectory
	b, cut, err := r.ReadTrajectory(t)
	if err != nil {
		return nil, err.Error()
	}
	l, err := session.ReadTrajectory(bytes.NewReader(b))
	if l == nil { // not a *session.TrajectoryError: reading bytes does not fail otherwise
		return nil, fmt.Sprintf("the trajectory %s could not be read: %v", rel, err)
	}
	steps = transcriptSteps(l.Events)
	for _, sk := range l.Skipped {
		steps = append(steps, htmlStep{Note: fmt.Sprintf("%s: %s", rel, sk)})
	}
	if err != nil && len(l.Events) > 0 {
		steps = append(steps, htmlStep{Note: fmt.Sprintf("%s: %v; it is not read past that line", rel, err)})
	}
	if l.Torn > 0 && !cut {
		steps = append(steps, htmlStep{Note: fmt.Sprintf("%s: line %d is cut short (the run was stopped while it wrote it), left out", rel, l.Torn)})
	}
	if cut {
		steps = append(steps, htmlStep{Note: fmt.Sprintf("%s is larger than %d MB: only its beginning is shown", rel, MaxTrajectoryBytes>>20)})
	}
	if err != nil && len(l.Events) == 0 {
		var te *session.TrajectoryError
		if errors.As(err, &te) && te.Line == 0 {
			return nil, fmt.Sprintf("the trajectory %s is empty", rel)
		}
		return nil, fmt.Sprintf("the trajectory %s: %v", rel, err)
	}
	return steps, ""
}

// transcriptSteps lays events out as the page shows them.
func transcriptSteps(events []session.Event) []htmlStep {
	var steps []htmlStep
	var setup *htmlSetup
	events = restartsAfterCells(events, func(e session.Event) bool { return e.Restart != nil },
		func(e session.Event) bool { return e.Cell != nil })
	for i, e := range events {
		switch {
		case e.Run != nil:
			r := e.Run
			setup = &htmlSetup{Question: r.Question, Condition: r.Condition, Protocol: string(r.Protocol), Model: r.Model}
			if r.Prefix != nil {
				setup.Prefix, setup.PrefixSource, setup.PrefixCells = r.Prefix.Name, r.Prefix.Source, r.Prefix.Cells
			}
			if r.Skill != nil {
				setup.HasSkill, setup.SkillBytes = true, r.Skill.Bytes
			}
			steps = append(steps, htmlStep{Setup: setup})
		case e.Prefix != nil:
			if setup != nil && setup.Built == nil {
				setup.Built = e.Prefix
			}
		case e.Call != nil:
			steps = append(steps, htmlStep{Turn: turnOf(e.Call, turnCells(events[i+1:]))})
		case e.Cell != nil:
			steps = append(steps, htmlStep{Cell: cellOf(e.Cell)})
		case e.Restart != nil:
			steps = append(steps, htmlStep{Restart: e.Restart})
		case e.Answer != nil, e.End != nil, e.Grade != nil:
			var o *htmlOutcome
			if n := len(steps); n > 0 {
				o = steps[n-1].Outcome
			}
			if o == nil || (e.Answer != nil && o.Answer != nil) || (e.End != nil && o.End != nil) || o.Grade != nil {
				o = &htmlOutcome{}
				steps = append(steps, htmlStep{Outcome: o})
			}
			switch {
			case e.Answer != nil:
				o.Answer = e.Answer
			case e.End != nil:
				o.End = e.End
			default:
				o.Grade = e.Grade
			}
		}
	}
	return steps
}

// turnCells are the cell events of the call that precedes events.
func turnCells(events []session.Event) []*session.CellEvent {
	var cells []*session.CellEvent
	for _, e := range events {
		if e.Call != nil || e.Run != nil {
			break
		}
		if e.Cell != nil {
			cells = append(cells, e.Cell)
		}
	}
	return cells
}

// turnOf shows a model call: the model's words unless its cells show them
// already (the code of bare and transcript replies), folded when the
// harness changed them before they ran (fences, prompts removed), and its
// tool calls when no cell served them.
func turnOf(e *session.CallEvent, cells []*session.CellEvent) *htmlTurn {
	t := &htmlTurn{CallEvent: e}
	msg := e.Content
	tools, ran, replied := false, false, false
	for _, c := range cells {
		tools = tools || c.Tool != ""
		ran = ran || (c.Code != "" && strings.TrimSpace(c.Code) == strings.TrimSpace(msg))
		replied = replied || (c.Reply != "" && c.Reply == msg)
	}
	switch {
	case strings.TrimSpace(msg) == "":
	case tools: // condition A: the words beside its calls
		t.Message = msg
	case ran:
	case replied:
		t.Written = msg
	default:
		t.Message = msg
	}
	if len(cells) == 0 {
		t.ToolCalls = e.ToolCalls
	}
	return t
}

// noteLine is a harness note in a cell's output (session.Note).
var noteLine = regexp.MustCompile(`^\[ctxcode: .*\]$`)

func cellOf(e *session.CellEvent) *htmlCell {
	c := &htmlCell{In: e.Code, Class: "c-" + unsafeAnchor.ReplaceAllString(string(e.Status), "_")}
	switch {
	case e.Tool != "" && e.Code == "": // a read, or a call the harness refused: its arguments as they came
		c.Label, c.In = e.Tool, e.Arguments
	case e.Tool == "bash":
		c.Label = "bash $"
	case e.Tool != "":
		c.Label = e.Tool
	case e.Count > 0:
		c.Label = fmt.Sprintf("In [%d]", e.Count)
	default:
		c.Label = "In"
	}
	lines := strings.SplitAfter(e.Output, "\n")
	for _, l := range lines {
		note := noteLine.MatchString(strings.TrimSuffix(l, "\n"))
		if n := len(c.Out); n > 0 && c.Out[n-1].Note == note {
			c.Out[n-1].Text += l
			continue
		}
		c.Out = append(c.Out, htmlSeg{l, note})
	}
	if e.Status != "" {
		c.Meta = append(c.Meta, string(e.Status))
	}
	if e.ExitCode != nil {
		c.Meta = append(c.Meta, fmt.Sprintf("exit %d", *e.ExitCode))
	}
	if e.Signal != "" {
		c.Meta = append(c.Meta, "signal "+e.Signal)
	}
	if e.TimedOut {
		c.Meta = append(c.Meta, "timed out")
	}
	c.Meta = append(c.Meta, fmt.Sprintf("%d ms", e.ElapsedMS))
	if e.RepeatOf > 0 {
		c.Meta = append(c.Meta, fmt.Sprintf("a repeat of cell %d, not run", e.RepeatOf))
	}
	if e.DroppedBytes > 0 {
		c.Meta = append(c.Meta, fmt.Sprintf("%d bytes dropped by the kernel", e.DroppedBytes))
	}
	if len(e.Answer) > 0 && string(e.Answer) != "null" {
		c.Meta = append(c.Meta, "ANSWER "+string(e.Answer))
	}
	return c
}

// htmlChart is the ladder chart's geometry, in the SVG's user units.
type htmlChart struct {
	W, H, MinWidth, MaxWidth int
	Left, Right              float64
	XLabelY, SepBottom       float64
	AccTextY                 float64
	Panels                   []htmlPanel // context tokens, then output tokens
	Groups                   []htmlGroup
}

// htmlPanel is one series' plot: its own scale, grid and axis, under its
// title.
type htmlPanel struct {
	Series, Class, Title string // Class: the ticks' colour (ctx, out)
	TitleY, Top, Bottom  float64
	MidY                 float64 // of the axis title
	Ticks                []htmlTick
}

type htmlTick struct {
	Y     float64
	Label string
}

type htmlGroup struct {
	X          float64
	SepX       float64 // > 0: a line before the group, where the model or the run changes
	Labels     []string
	Model      string
	Condition  string
	Run        int
	Acc, AccCI string
	Bars       []htmlBar
}

type htmlBar struct {
	Class, Series    string
	X, Y, W, H, CX   float64
	Lo, Hi           float64 // whisker ends (y); Lo == Hi: none
	Title            string
	Empty            bool
	Condition, Model string
	Run              int
}

// The chart's layout, in user units (the SVG scales to its box).
const (
	chartGroupW   = 80.0
	chartMinPlotW = 360.0 // room for the panels' titles with few groups
	chartBarW     = 32.0
	chartLeft     = 64.0 // room for the axes' ticks and titles
	chartRight    = 16.0
	chartAccY     = 22.0  // the accuracy's baseline
	chartCtxTop   = 76.0  // the context panel's plot
	chartCtxH     = 150.0 //
	chartPanelGap = 46.0  // from the context plot's bottom to the output plot's top: its "0" and the output panel's title
	chartOutH     = 110.0
	chartTitleUp  = 12.0 // a panel's title, above its plot
	chartLineH    = 15.0
)

// ladderChart lays out the ladder chart: a group per row of the ladder,
// with the accuracy above, a bar of mean context tokens in the upper panel
// and one of mean output tokens in the lower panel, whiskers from the
// bootstrap interval. Each panel has its own scale, grid and axis, and its
// title says what it counts in which unit: output tokens are a small
// fraction of context tokens, and bars side by side on two scales read as
// comparable when they are not.
//
// The chart is SVG written here by hand rather than drawn with gonum/plot
// (whose vgsvg backend would do the drawing): it is inline in the page,
// styled by the page's CSS (colours, dark mode, larger text on a phone),
// scales with its box through its viewBox, and its bars are elements with
// classes and data attributes that a test counts in the DOM; gonum/plot
// writes a standalone document of fixed size in points, with its own font
// handling, no hooks for classes, and a dependency tree this package does
// not otherwise need. The layout is a few dozen lines of arithmetic.
func ladderChart(rep *Report) htmlChart {
	n := len(rep.Rows)
	groupW := max(chartGroupW, chartMinPlotW/float64(max(n, 1)))
	ch := htmlChart{Left: chartLeft, AccTextY: chartAccY}
	ch.Right = chartLeft + float64(max(n, 1))*groupW
	ch.W = int(ch.Right + chartRight)
	ctxTop, ctxStep := niceScale(maxOf(rep.Rows, func(r Row) Dist { return r.Context }))
	outTop, outStep := niceScale(maxOf(rep.Rows, func(r Row) Dist { return r.Output }))
	outPlotTop := chartCtxTop + chartCtxH + chartPanelGap
	ch.Panels = []htmlPanel{
		panel("context", "ctx", "context tokens per trial (mean)", chartCtxTop, chartCtxH, ctxTop, ctxStep),
		panel("output", "out", "output tokens per trial (mean), its own scale", outPlotTop, chartOutH, outTop, outStep),
	}
	ch.XLabelY = outPlotTop + chartOutH + 18
	models := map[string]bool{}
	for _, r := range rep.Rows {
		models[r.Model] = true
	}
	lines := 1
	if len(models) > 1 {
		lines++
	}
	if len(rep.Runs) > 1 {
		lines++
	}
	ch.H = int(ch.XLabelY + float64(lines-1)*chartLineH + 12)
	ch.SepBottom = float64(ch.H) - 2
	// Wide enough that its text stays readable, and not so wide that it
	// is outsized on a big screen: the box scrolls below MinWidth.
	ch.MinWidth = int(0.66 * float64(ch.W))
	ch.MaxWidth = int(1.3 * float64(ch.W))

	for i, r := range rep.Rows {
		cx := chartLeft + (float64(i)+0.5)*groupW
		g := htmlGroup{X: cx, Labels: []string{r.Condition}, Model: r.Model, Condition: r.Condition, Run: r.Run + 1}
		if len(models) > 1 {
			g.Labels = append(g.Labels, r.Model)
		}
		if len(rep.Runs) > 1 {
			g.Labels = append(g.Labels, fmt.Sprintf("run %d", r.Run+1))
		}
		if i > 0 && (r.Model != rep.Rows[i-1].Model || r.Run != rep.Rows[i-1].Run) {
			g.SepX = cx - groupW/2
		}
		if r.Graded > 0 {
			g.Acc = fmt.Sprintf("%.0f%%", 100*r.Accuracy.Est)
			g.AccCI = "[" + bracket(r.Accuracy.Tasks, "%.0f", 100*r.Accuracy.Lo, 100*r.Accuracy.Hi) + "]"
		} else {
			g.Acc = "–"
		}
		for j, s := range []struct {
			class, series string
			d             Dist
			top           float64
		}{{"bar-context", "context tokens", r.Context, ctxTop}, {"bar-output", "output tokens", r.Output, outTop}} {
			p := ch.Panels[j]
			y := func(v float64) float64 { return p.Bottom - v/s.top*(p.Bottom-p.Top) }
			x := cx - chartBarW/2
			b := htmlBar{Class: s.class, Series: s.series, X: x, W: chartBarW, CX: cx,
				Y: p.Bottom, Lo: p.Bottom, Hi: p.Bottom, Condition: r.Condition, Model: r.Model, Run: r.Run + 1}
			label := r.Condition
			if len(models) > 1 {
				label = r.Model + " " + label
			}
			if len(rep.Runs) > 1 {
				label = fmt.Sprintf("run %d %s", r.Run+1, label)
			}
			if s.d.N == 0 {
				b.Empty = true
				b.Title = fmt.Sprintf("%s, %s: no trial with a model result", label, s.series)
			} else {
				b.Y = y(s.d.Mean)
				b.Lo, b.Hi = y(s.d.Lo), y(s.d.Hi)
				b.Title = fmt.Sprintf("%s, %s: mean %.0f [%s] over %d trials", label, s.series, s.d.Mean, bracket(s.d.Tasks, "%.0f", s.d.Lo, s.d.Hi), s.d.N)
			}
			b.H = p.Bottom - b.Y
			g.Bars = append(g.Bars, b)
		}
		ch.Groups = append(ch.Groups, g)
	}
	return ch
}

// panel is a series' plot from top, h high, on a scale from 0 to scaleMax
// in steps of step.
func panel(series, class, title string, top, h, scaleMax, step float64) htmlPanel {
	p := htmlPanel{Series: series, Class: class, Title: title, TitleY: top - chartTitleUp, Top: top, Bottom: top + h, MidY: top + h/2}
	for v := 0.0; v <= scaleMax+step/2; v += step {
		p.Ticks = append(p.Ticks, htmlTick{p.Bottom - v/scaleMax*h, tickLabel(v)})
	}
	return p
}

func maxOf(rows []Row, f func(Row) Dist) float64 {
	m := 0.0
	for _, r := range rows {
		if d := f(r); d.N > 0 {
			m = max(m, d.Mean, d.Hi)
		}
	}
	return m
}

// niceScale is an axis from 0 to top in about four steps of 1, 2, 2.5 or
// 5 times a power of ten, top >= m.
func niceScale(m float64) (top, step float64) {
	if m <= 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return 1, 0.25
	}
	raw := m / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * mag
	for _, k := range []float64{1, 2, 2.5, 5} {
		if k*mag >= raw {
			step = k * mag
			break
		}
	}
	return math.Ceil(m/step-1e-9) * step, step
}

func tickLabel(v float64) string {
	if v >= 10000 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// The table cells' numbers, in the Markdown's formats (markdown.go's
// accuracy, dist, wallSeconds, ratio and diff) with the intervals marked
// up; they hold only numbers.

func accuracyHTML(k, n int, iv Interval) template.HTML {
	if n == 0 {
		return "–"
	}
	return template.HTML(fmt.Sprintf(`%d/%d = <b>%.0f%%</b> <span class="ci">[%s]</span>`, k, n, 100*iv.Est, bracketHTML(iv.Tasks, "%.0f", 100*iv.Lo, 100*iv.Hi)))
}

// bracketHTML is bracket, escaped ("n &lt; 2").
func bracketHTML(tasks int, format string, lo, hi float64) string {
	return template.HTMLEscapeString(bracket(tasks, format, lo, hi))
}

func distHTML(d Dist, prec int) template.HTML {
	if d.N == 0 {
		return "–"
	}
	f := func(x float64) string { return fmt.Sprintf("%.*f", prec, x) }
	return template.HTML(fmt.Sprintf(`%s <span class="ci">[%s]</span> <span class="q">(%s; %s–%s)</span>`,
		f(d.Mean), bracketHTML(d.Tasks, fmt.Sprintf("%%.%df", prec), d.Lo, d.Hi), f(d.Median), f(d.Q1), f(d.Q3)))
}

func wallHTML(d Dist) template.HTML {
	if d.N == 0 {
		return "–"
	}
	return template.HTML(fmt.Sprintf(`%.2fs <span class="ci">[%s]</span>`, d.Mean/1000, bracketHTML(d.Tasks, "%.2f", d.Lo/1000, d.Hi/1000)))
}

func ratioHTML(iv Interval, n int) template.HTML {
	if n == 0 || iv.Tasks == 0 || math.IsNaN(iv.Est) {
		return "–"
	}
	return template.HTML(fmt.Sprintf(`%.3f <span class="ci">[%s]</span>`, iv.Est, bracketHTML(iv.Tasks, "%.3f", iv.Lo, iv.Hi)))
}

func diffHTML(iv Interval, n int) template.HTML {
	if n == 0 {
		return "–"
	}
	return template.HTML(fmt.Sprintf(`%+.0f pp <span class="ci">[%s]</span>`, 100*iv.Est, bracketHTML(iv.Tasks, "%+.0f", 100*iv.Lo, 100*iv.Hi)))
}

var htmlFuncs = template.FuncMap{
	"accuracy": accuracyHTML,
	"dist":     distHTML,
	"wall":     wallHTML,
	"ratio":    ratioHTML,
	"diff":     diffHTML,
	"f":        func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"add":      func(a, b float64) float64 { return a + b },
	"lineY":    func(base float64, i int) float64 { return base + float64(i)*chartLineH },
	"usd":      func(prec int, v float64) string { return fmt.Sprintf("%.*f", prec, v) },
	"seconds":  func(ms int64) string { return fmt.Sprintf("%.2f s", float64(ms)/1000) },
	"raw":      func(r json.RawMessage) string { return string(r) },
	"join":     strings.Join,
	"inc":      func(i int) int { return i + 1 },
	"turns": func(n int) string {
		if n == 1 {
			return "1 turn"
		}
		return strconv.Itoa(n) + " turns"
	},
	"ladderMethod":        func() string { return ladderMethod },
	"layersMethod":        func() string { return layersMethod },
	"power":               powerNote,
	"fewestTasks":         fewestTasks,
	"ladderPower":         ladderPower,
	"poolWaitNote":        poolWaitNote,
	"sessionsMethod":      func() string { return sessionsMethod },
	"stageAccuracyMethod": func() string { return stageAccuracyMethod },
	"wnMethod":            func() string { return wnMethod },
	"ccMethod":            func() string { return ccMethod },
	"sessionsCSS":         func() template.CSS { return template.CSS(sessionsCSS) },
	"dropped":             droppedNote,
	"comparisons": func(first string, rows []Comparison) any {
		return struct {
			First string
			Rows  []Comparison
		}{first, rows}
	},
}

var htmlTemplate = template.Must(template.Must(template.Must(template.New("report.html").Funcs(htmlFuncs).Funcs(recordFuncs).Parse(htmlSource)).Parse(accCostSource)).Parse(wnSource))

const htmlSource = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="ctxcode report (a later report replaces this file only while it is unchanged); ` + bench.GeneratedMark + `">
<title>ctxcode report</title>
<style>
:root{--fg:#1f2328;--muted:#636c76;--bg:#fff;--panel:#f6f8fa;--line:#d8dee4;--code:#f6f8fa;
--ctx:#3a6ea5;--out:#e07b20;--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--infra:#8250df;--note:#7d4e00;--link:#0969da}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--panel:#161b22;--line:#30363d;
--code:#161b22;--ctx:#6ea8e8;--out:#f0a050;--ok:#3fb950;--bad:#f85149;--warn:#d29922;--infra:#a371f7;--note:#e3b341;--link:#4493f8}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue","DejaVu Sans",Arial,sans-serif}
main{max-width:1240px;margin:0 auto;padding:16px 20px 48px;overflow-wrap:break-word}
h1{font-size:1.6em;margin:.2em 0 .4em}
h2{font-size:1.25em;margin:1.6em 0 .4em;padding-bottom:.2em;border-bottom:1px solid var(--line)}
h3{font-size:1.05em;margin:1.2em 0 .3em}
a{color:var(--link)}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono","Liberation Mono",monospace;font-size:.86em}
p.lede,.muted{color:var(--muted)}
nav.toc{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:.92em;margin:0 0 8px}
dl.run{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:2px 14px;margin:6px 0 14px;padding:10px 12px;background:var(--panel);border:1px solid var(--line);border-radius:6px}
dl.run dt{color:var(--muted)}
dl.run dd{margin:0;overflow-wrap:anywhere}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch;border:1px solid var(--line);border-radius:6px;margin:8px 0 14px;max-width:100%}
table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums;width:100%}
th,td{padding:5px 9px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top;white-space:nowrap}
tr:last-child td{border-bottom:0}
th{background:var(--panel);font-weight:600}
td.n,th.n{text-align:right}
.ci,.q{color:var(--muted)}
table.ladder .ci,table.ladder .q{display:block;font-size:.92em}
table.ladder th{white-space:normal;vertical-align:bottom}
td.all{background:color-mix(in srgb,var(--ok) 10%,transparent)}
td.some{background:color-mix(in srgb,var(--warn) 14%,transparent)}
td.none{background:color-mix(in srgb,var(--bad) 12%,transparent)}
td.nores{color:var(--muted)}
td .links a{margin-right:.35em}
.infra-tag{color:var(--infra)}
figure.chart{margin:8px 0 16px}
figure.chart .scroll{padding:6px 4px 2px}
svg.ladder{display:block;width:100%;height:auto;margin:0 auto}
svg.ladder text{fill:var(--fg);font-size:12px;font-family:inherit}
svg.ladder .tick{font-size:11px;fill:var(--muted)}
svg.ladder .tick.ctx{fill:var(--ctx)}
svg.ladder .tick.out{fill:var(--out)}
svg.ladder .axis-title{font-size:11.5px}
svg.ladder .panel-title{font-size:12px}
svg.ladder .axis-title.ctx{fill:var(--ctx)}
svg.ladder .axis-title.out{fill:var(--out)}
svg.ladder .grid line{stroke:var(--line);stroke-width:1}
svg.ladder .baseline{stroke:var(--muted);stroke-width:1}
svg.ladder .sep{stroke:var(--muted);stroke-width:1;stroke-dasharray:3 3}
svg.ladder .bar-context,svg.ladder .swatch-context{fill:var(--ctx)}
svg.ladder .bar-output,svg.ladder .swatch-output{fill:var(--out)}
svg.ladder .whisker{stroke:var(--fg);stroke-width:1.4;fill:none}
svg.ladder .acc{font-weight:700;font-size:13px}
svg.ladder .acc-ci{font-size:10.5px;fill:var(--muted)}
svg.ladder .acc-label{font-size:11px;fill:var(--muted)}
svg.ladder .xlabel{font-weight:700;font-size:13px}
svg.ladder .xlabel.sub{font-weight:400;font-size:11px;fill:var(--muted)}
svg.ladder .empty{font-size:10px;fill:var(--muted)}
svg.acccost{display:block;width:100%;height:auto;margin:0 auto}
svg.acccost text{fill:var(--fg);font-size:12px;font-family:inherit}
svg.acccost .tick{font-size:11px;fill:var(--muted)}
svg.acccost .axis-title{font-size:11.5px}
svg.acccost .grid line{stroke:var(--line);stroke-width:1}
svg.acccost .baseline{stroke:var(--muted);stroke-width:1}
svg.acccost .errbar{stroke:var(--muted);stroke-width:1.4;fill:none}
svg.acccost .dot{stroke:var(--bg);stroke-width:1.5}
svg.acccost .dot.m0{fill:var(--ctx)}
svg.acccost .dot.m1{fill:var(--out)}
svg.acccost .dot.m2{fill:var(--ok)}
svg.acccost .dot.m3{fill:var(--infra)}
svg.acccost .dot.run2{fill:var(--bg);stroke-width:2}
svg.acccost .dot.run2.m0{stroke:var(--ctx)}
svg.acccost .dot.run2.m1{stroke:var(--out)}
svg.acccost .dot.run2.m2{stroke:var(--ok)}
svg.acccost .dot.run2.m3{stroke:var(--infra)}
svg.acccost .plabel{font-weight:700}
p.power,ul.dropped{color:var(--muted);font-size:.9em}
figcaption{color:var(--muted);font-size:.9em}
ul.notes li{margin:.2em 0}
details.trial{border:1px solid var(--line);border-radius:6px;margin:4px 0;background:var(--bg)}
details.trial>summary{cursor:pointer;padding:5px 10px;list-style-position:inside;overflow-wrap:anywhere}
details.trial>summary:hover{background:var(--panel)}
details.trial[open]>summary{border-bottom:1px solid var(--line);background:var(--panel)}
details.trial:target{outline:2px solid var(--link);outline-offset:1px}
summary .cond{font-weight:700}
summary .meta{color:var(--muted)}
.v{font-weight:600}
.v-correct{color:var(--ok)}
.v-wrong{color:var(--bad)}
.v-unexecuted{color:var(--warn)}
.v-no_answer{color:var(--muted)}
.v-infra{color:var(--infra)}
.transcript{padding:8px 12px 12px;overflow-wrap:anywhere}
.transcript dl.line{display:flex;flex-wrap:wrap;gap:2px 16px;margin:0 0 8px;font-size:.88em;color:var(--muted)}
.transcript dl.line div{display:flex;gap:4px;min-width:0}
.transcript dl.line dt{font-weight:600}
.transcript dl.line dd{margin:0;color:var(--fg);overflow-wrap:anywhere}
.question{margin:4px 0 6px;padding:6px 10px;border-left:3px solid var(--ctx);background:var(--panel)}
.setup{font-size:.88em;color:var(--muted);margin:0 0 6px}
.turn{font-size:.92em;font-weight:600;margin:12px 0 4px;padding-top:6px;border-top:1px dashed var(--line)}
.turn .meta{font-weight:400;color:var(--muted)}
.said{display:grid;grid-template-columns:5.5em minmax(0,1fr);gap:0 8px;margin:4px 0}
.lbl{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:.8em;color:var(--muted);text-align:right;padding-top:7px;overflow-wrap:anywhere}
.in .lbl{color:var(--ctx)}
.out .lbl{color:var(--out)}
pre{margin:0;padding:6px 9px;background:var(--code);border:1px solid var(--line);border-radius:5px;white-space:pre-wrap;overflow-wrap:anywhere;max-height:36em;overflow:auto}
.out pre{background:transparent}
.c-error .out pre{border-color:var(--bad)}
.c-timeout .out pre{border-color:var(--warn)}
.hn{color:var(--note);font-style:italic}
.cellmeta{margin:2px 0 6px calc(5.5em + 8px);font-size:.8em;color:var(--muted)}
details.written{margin:2px 0 4px calc(5.5em + 8px);font-size:.88em}
details.written summary{cursor:pointer;color:var(--muted)}
.restart{color:var(--warn);font-weight:600;margin:6px 0}
.result{margin:10px 0 0;padding:6px 10px;border:1px solid var(--line);border-radius:5px;background:var(--panel)}
.result p{margin:3px 0}
.missing,.tnote{color:var(--muted);font-style:italic;margin:4px 0}
@media (max-width:640px){
body{font-size:14px}
main{padding:10px 10px 40px}
h1{font-size:1.35em}
dl.run{grid-template-columns:1fr;gap:0}
dl.run dd{margin-bottom:4px}
.said{grid-template-columns:1fr}
.lbl{text-align:left;padding-top:2px}
.cellmeta,details.written{margin-left:0}
.transcript{padding:6px 8px 10px}
svg.ladder text{font-size:14.5px}
svg.ladder .tick{font-size:14px}
svg.ladder .axis-title{font-size:14px}
svg.ladder .panel-title{font-size:14px}
svg.ladder .acc,svg.ladder .xlabel{font-size:16px}
svg.ladder .acc-ci,svg.ladder .xlabel.sub{font-size:13px}
svg.ladder .acc-label{font-size:12px}
svg.acccost text,svg.acccost .tick,svg.acccost .axis-title{font-size:14px}
}
{{if .Sessions}}{{sessionsCSS}}{{end -}}
</style>
</head>
<body>
<main>
<h1>ctxcode report</h1>
<nav class="toc"><a href="#ladder">Ladder</a><a href="#chart">Chart</a><a href="#acccost">Accuracy and cost</a>
{{- if .Sessions}}<a href="#sessions">Sessions</a>{{end}}
{{- if .Rep.Layers}}<a href="#attribution">Attribution{{if .ManyRuns}} (run 1){{end}}</a>{{end}}
{{- if .Rep.Versus}}<a href="#versus">Against {{.Rep.Baseline}}{{if .ManyRuns}} (run 1){{end}}</a>{{end}}
{{- if .Rep.Pairs}}<a href="#pairs">Second run against first</a>{{end}}
{{- range .TaskTables}}<a href="#{{.ID}}">{{.Title}}</a>{{end}}
{{- if .Rep.Notes}}<a href="#notes">Notes</a>{{end}}
{{- if .Transcripts}}<a href="#transcripts">Transcripts</a>{{end}}</nav>
{{range .Heads}}
<section class="run-head">
<h2>{{.Label}}</h2>
<dl class="run">
<dt>directory</dt><dd><code>{{.Dir}}</code></dd>
<dt>models</dt><dd>{{join .Models ", "}}</dd>
<dt>conditions</dt><dd>{{join .Conditions ", "}}</dd>
<dt>tasks</dt><dd>{{.Tasks}} ({{.TaskSource}}) × {{.Reps}} reps</dd>
<dt>trials</dt><dd>{{.Keys}} of {{.Expected}} have a result ({{.Lines}} lines)</dd>
<dt>sandbox</dt><dd>{{.Sandbox}}</dd>
<dt>ctxcode</dt><dd>{{.Version}}, started {{.Created}}</dd>
</dl>
</section>
{{end}}
<section id="ladder">
<h2>The ladder</h2>
<p class="lede">{{ladderMethod}}</p>
<div class="scroll"><table class="ladder">
<thead><tr>{{if .ManyRuns}}<th>run</th>{{end}}<th>model</th><th>condition</th><th class="n">trials</th><th>accuracy</th><th class="n">infra</th><th class="n">budget stops</th><th class="n">kernel deaths</th><th>answers <span class="q">exec/stated/ unexec/none</span></th><th>turns</th><th>context tokens</th><th>output tokens</th><th>cached tokens</th><th>wall</th>{{if .Money}}<th class="n">USD per trial</th><th class="n">USD in all</th><th class="n">cache saved</th>{{end}}</tr></thead>
<tbody>
{{- $money := .Money}}{{$many := .ManyRuns}}
{{- range .Rep.Rows}}
<tr data-model="{{.Model}}" data-condition="{{.Condition}}">{{if $many}}<td class="n">{{inc .Run}}</td>{{end}}<td>{{.Model}}</td><td><b>{{.Condition}}</b></td><td class="n">{{.Trials}}</td><td>{{accuracy .Correct .Graded .Accuracy}}</td><td class="n">{{.Infra}}</td><td class="n">{{.BudgetStops}}</td><td class="n">{{.KernelDied}}</td><td>{{.Sources.Executed}}/{{.Sources.Stated}}/{{.Sources.Unexecuted}}/{{.Sources.None}}</td><td>{{dist .Turns 2}}</td><td>{{dist .Context 0}}</td><td>{{dist .Output 0}}</td><td>{{dist .Cached 0}}</td><td>{{wall .WallMS}}</td>
{{- if $money}}{{with .Money}}<td class="n">{{usd 5 .MeanUSD}}</td><td class="n">{{usd 4 .TotalUSD}}</td><td class="n">{{usd 4 .CacheSavedUSD}}</td>{{else}}<td></td><td></td><td></td>{{end}}{{end}}</tr>
{{- end}}
</tbody></table></div>
{{if .Estimated}}<p class="muted">Token counts are estimated by the tokenizer where the model reported none.</p>{{end}}
{{- range ladderPower .Rep}}
<p class="power">{{.}}</p>{{end}}
{{- range .Rep.Rows}}{{if .Sources.Literal}}
<p class="muted">{{.Model}} {{.Condition}}: {{.Sources.Literal}} literal answer(s), {{.Sources.LiteralRight}} of them right: ANSWER of a value typed in the cell, not computed there; counted in accuracy as executed answers.</p>{{end}}{{end}}
{{- with poolWaitNote .Rep.Rows}}
<p class="muted pool-wait">{{.}}</p>{{end}}
</section>
{{- if recordRows .Rep.Rows}}

<section id="records">
<h2>Answers by part</h2>
<p class="lede">{{recordsMethod}}</p>
<div class="scroll"><table class="records">
<thead><tr>{{if .ManyRuns}}<th>run</th>{{end}}<th>model</th><th>condition</th><th>ABQ</th><th>PSAQ</th><th>USAQ</th><th class="n">parts right</th></tr></thead>
<tbody>
{{- $many := .ManyRuns}}
{{- range $r := .Rep.Rows}}{{with .Records}}
<tr>{{if $many}}<td class="n">{{inc $r.Run}}</td>{{end}}<td>{{$r.Model}}</td><td><b>{{$r.Condition}}</b></td><td>{{accuracy $r.Correct $r.Graded .ABQ}}</td><td>{{share .PSAQ $r.Graded}}</td><td>{{share .USAQ .Parts}}</td><td class="n">{{.PartsRight}}/{{.Parts}}</td></tr>
{{- end}}{{end}}
</tbody></table></div>
</section>
{{- end}}
{{- with .Rep.By}}

<section id="by">
<h2>By {{.Field}}</h2>
<p class="lede">{{byMethod .}}</p>
{{- $recs := byRecords .}}{{$many := $.ManyRuns}}
<div class="scroll"><table class="by">
<thead><tr>{{if $many}}<th>run</th>{{end}}<th>{{.Field}}</th><th class="n">tasks</th><th>model</th><th>condition</th><th>accuracy</th>{{if $recs}}<th>PSAQ</th><th>USAQ</th>{{end}}</tr></thead>
<tbody>
{{- range $g := .Rows}}
<tr>{{if $many}}<td class="n">{{inc .Run}}</td>{{end}}<td>{{.Value}}</td><td class="n">{{.Tasks}}</td><td>{{.Model}}</td><td><b>{{.Condition}}</b></td><td>{{accuracy .Correct .Graded .Accuracy}}</td>{{if $recs}}{{with .Records}}<td>{{share .PSAQ $g.Graded}}</td><td>{{share .USAQ .Parts}}</td>{{else}}<td></td><td></td>{{end}}{{end}}</tr>
{{- end}}
</tbody></table></div>
</section>
{{- end}}

<section id="chart">
<h2>The ladder chart</h2>
{{with .Chart}}<figure class="chart">
<div class="scroll">
<svg class="ladder" viewBox="0 0 {{.W}} {{.H}}" style="min-width:{{.MinWidth}}px;max-width:{{.MaxWidth}}px" role="img" aria-labelledby="chart-title">
<title id="chart-title">Mean context tokens and mean output tokens per trial, each in its own panel on its own scale, and accuracy, by condition</title>
{{- $c := .}}
<text class="acc-label" x="{{f (add .Left -6)}}" y="{{f .AccTextY}}" text-anchor="end">accuracy</text>
{{- range .Panels}}
<g class="panel panel-{{.Series}}">
<rect class="swatch swatch-{{.Series}}" x="{{f $c.Left}}" y="{{f (add .TitleY -10)}}" width="12" height="12"></rect><text class="panel-title" x="{{f (add $c.Left 18)}}" y="{{f .TitleY}}">{{.Title}}</text>
<g class="grid">{{range .Ticks}}<line x1="{{f $c.Left}}" x2="{{f $c.Right}}" y1="{{f .Y}}" y2="{{f .Y}}"></line>{{end}}</g>
<g class="axis">{{$p := .}}{{range .Ticks}}<text class="tick {{$p.Class}}" x="{{f (add $c.Left -6)}}" y="{{f (add .Y 4)}}" text-anchor="end">{{.Label}}</text>{{end}}
<text class="axis-title {{.Class}}" transform="translate(14 {{f .MidY}}) rotate(-90)" text-anchor="middle">tokens</text></g>
<line class="baseline" x1="{{f $c.Left}}" x2="{{f $c.Right}}" y1="{{f .Bottom}}" y2="{{f .Bottom}}"></line>
</g>
{{- end}}
{{- range .Groups}}
<g class="group" data-run="{{.Run}}" data-model="{{.Model}}" data-condition="{{.Condition}}">
{{- if .SepX}}<line class="sep" x1="{{f .SepX}}" x2="{{f .SepX}}" y1="{{f (add $c.AccTextY -14)}}" y2="{{f $c.SepBottom}}"></line>{{end}}
<text class="acc" x="{{f .X}}" y="{{f $c.AccTextY}}" text-anchor="middle">{{.Acc}}</text>{{if .AccCI}}<text class="acc-ci" x="{{f .X}}" y="{{f (add $c.AccTextY 16)}}" text-anchor="middle">{{.AccCI}}</text>{{end}}
{{- range .Bars}}
<rect class="bar {{.Class}}" data-run="{{.Run}}" data-model="{{.Model}}" data-condition="{{.Condition}}" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"><title>{{.Title}}</title></rect>
{{- if .Empty}}<text class="empty" x="{{f .CX}}" y="{{f (add .Y -4)}}" text-anchor="middle">–</text>
{{- else if ne .Lo .Hi}}<path class="whisker" d="M{{f (add .CX -5)}} {{f .Hi}}H{{f (add .CX 5)}}M{{f .CX}} {{f .Hi}}V{{f .Lo}}M{{f (add .CX -5)}} {{f .Lo}}H{{f (add .CX 5)}}"></path>{{end}}
{{- end}}
{{- $x := .X}}{{range $i, $l := .Labels}}<text class="xlabel{{if $i}} sub{{end}}" x="{{f $x}}" y="{{f (lineY $c.XLabelY $i)}}" text-anchor="middle">{{$l}}</text>{{end}}
</g>
{{- end}}
</svg>
</div>
<figcaption>Bars: the mean per trial with a model result, context tokens in the upper panel and output tokens in the lower one, each panel on its own scale (compare bars within a panel, not across panels); whiskers: the bootstrap 95% interval over tasks; at the top, each condition's accuracy and its 95% interval over tasks (percent), as in the ladder.</figcaption>
</figure>{{end}}
</section>

<section id="acccost">
<h2>Accuracy and cost</h2>
{{template "acccost" .AccCost}}
</section>
{{- with .Sessions}}{{template "sessions" .}}{{end}}
{{define "comparisons"}}<div class="scroll"><table class="comparisons">
<thead><tr><th>{{.First}}</th><th>model</th><th>from → to</th><th class="n">tasks</th><th>context ratio</th><th>output ratio</th><th>accuracy difference</th></tr></thead>
<tbody>{{range .Rows}}
<tr><td>{{.Name}}</td><td>{{if .FromModel}}{{.FromModel}} → {{end}}{{.Model}}</td><td>{{.From}} → {{.To}}</td><td class="n">{{.Tasks}}</td><td>{{ratio .Context .Tasks}}</td><td>{{ratio .Output .Tasks}}</td><td>{{diff .Accuracy .Tasks}}</td></tr>{{end}}
</tbody></table></div>
{{- $dropped := false}}{{range .Rows}}{{if .Dropped.Any}}{{$dropped = true}}{{end}}{{end}}
{{- if $dropped}}
<ul class="dropped">{{range .Rows}}{{with dropped .}}<li>Dropped: {{.}}</li>{{end}}{{end}}</ul>{{end}}
{{- with power (fewestTasks .Rows) true ""}}
<p class="power">{{.}}</p>{{end}}{{end}}
{{if .Rep.Layers}}
<section id="attribution">
<h2>{{.Titles.Layers}}</h2>
<p class="lede">{{layersMethod}}</p>
{{template "comparisons" (comparisons "layer" .Rep.Layers)}}
</section>
{{end}}
{{- if .Rep.Versus}}
<section id="versus">
<h2>{{.Titles.Versus}}</h2>
{{template "comparisons" (comparisons "comparison" .Rep.Versus)}}
</section>
{{end}}
{{- if .Rep.Pairs}}
<section id="pairs">
<h2>{{.Titles.Pairs}}</h2>
{{template "comparisons" (comparisons "condition" .Rep.Pairs)}}
</section>
{{end}}
{{- range .TaskTables}}
<section id="{{.ID}}">
<h2>{{.Title}}</h2>
<p class="lede">Correct of the reps with a model result, mean turns, mean context tokens{{if .Linked}}; each rep links to its transcript below{{end}}.</p>
<div class="scroll"><table class="tasks">
<thead><tr><th>task</th>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}
<tr><td><a href="#{{.Anchor}}" title="{{.Question}}">{{.Task}}</a></td>{{range .Cells}}<td class="{{.Class}}">{{.Text}}{{if .Infra}} · <span class="infra-tag">{{.Infra}} infra</span>{{end}}{{if .Links}} · <span class="links">{{range .Links}}<a href="{{.Href}}">{{.Label}}</a>{{end}}</span>{{end}}</td>{{end}}</tr>{{end}}
</tbody></table></div>
</section>
{{end}}
{{- if .Rep.Notes}}
<section id="notes">
<h2>Notes</h2>
<ul class="notes">{{range .Rep.Notes}}<li>{{.}}</li>{{end}}</ul>
</section>
{{end}}
{{- if .Transcripts}}
<section id="transcripts">
<h2>Transcripts</h2>
<p class="lede">Every trial, folded: open one to read its line of trials.jsonl and its trajectory (the model's calls, the cells as they ran with their output as the model read it, the harness's notes, the answer and the grade).</p>
{{- range .Transcripts}}
{{if .Label}}<h3 class="run-label">{{.Label}}</h3>{{end}}
{{- range .Groups}}
<h3 id="{{.Anchor}}">{{.Task}}{{if .Question}} <span class="muted">— {{.Question}}</span>{{end}}</h3>
{{- range .Trials}}{{template "trial" .}}{{end}}
{{- end}}
{{- end}}
</section>
{{end}}
</main>
</body>
</html>
{{define "trial"}}
<details class="trial" id="{{.ID}}">
<summary><span class="mono">{{.Task}}</span> · {{if .ShowModel}}{{.Model}} {{end}}<span class="cond">{{.Condition}}</span> · r{{.Rep}} · <span class="v {{.VerdictClass}}">{{.Verdict}}</span>{{if .Budget}} <span class="v v-wrong">({{.Status}})</span>{{end}} · <span class="meta">{{turns .Turns}} · {{.Context}} context · {{.Output}} output tokens{{if gt .Attempt 1}} · attempt {{.Attempt}}{{end}}</span>{{if .Notebook}} · <a class="nb" href="{{.Notebook}}">notebook</a>{{end}}</summary>
<div class="transcript">
<dl class="line">
<div><dt>status</dt><dd>{{.Status}}</dd></div>
<div><dt>answer</dt><dd><code>{{if .Answer}}{{.Answer}}{{else}}none{{end}}</code>{{if .Source}} ({{.Source}}){{end}}</dd></div>
<div><dt>verdict</dt><dd>{{.Verdict}}{{if .Reason}}: {{.Reason}}{{end}}</dd></div>
{{if .Error}}<div><dt>error</dt><dd>{{.Error}}</dd></div>{{end}}
<div><dt>wall</dt><dd>{{seconds .WallMS}} (kernel {{seconds .KernelMS}}, model {{seconds .ModelMS}})</dd></div>
{{if .Restarts}}<div><dt>restarts</dt><dd>{{.Restarts}}</dd></div>{{end}}
{{if .Retries}}<div><dt>retries</dt><dd>{{.Retries}}</dd></div>{{end}}
<div><dt>trajectory</dt><dd><code>{{.Trajectory}}</code></dd></div>
</dl>
{{- if .Missing}}<p class="missing">{{.Missing}}</p>{{end}}
{{- range .Steps}}
{{- with .Setup}}
<div class="question"><b>Question:</b> {{.Question}}</div>
<p class="setup">condition {{.Condition}} · protocol {{.Protocol}} · model {{.Model}}{{if .Prefix}} · prefix {{.Prefix}} ({{.PrefixSource}}, {{.PrefixCells}} cells){{end}}{{if .HasSkill}} · no prefix: the skill document ({{.SkillBytes}} bytes){{end}}{{with .Built}} · set up in {{seconds .SetupMS}}{{end}}</p>
{{- end}}
{{- with .Turn}}
<div class="turn">Turn {{.Turn}} <span class="meta">· {{.Usage.PromptTokens}} prompt + {{.Usage.CompletionTokens}} output tokens{{if .Usage.CachedTokens}} ({{.Usage.CachedTokens}} cached){{end}}{{if .Usage.Estimated}} (estimated){{end}}{{if .FinishReason}} · {{.FinishReason}}{{end}}{{if gt .Attempts 1}} · {{.Attempts}} attempts{{end}} · {{.LatencyMS}} ms</span></div>
{{- if .Error}}<p class="restart">the call failed: {{.Error}}</p>{{end}}
{{- if .Message}}<div class="said model"><span class="lbl">model</span><pre>{{.Message}}</pre></div>{{end}}
{{- if .Written}}<details class="written"><summary>the message as the model wrote it (the harness changed it before it ran)</summary><pre>{{.Written}}</pre></details>{{end}}
{{- range .ToolCalls}}<div class="said call"><span class="lbl">{{.Name}}</span><pre>{{.Arguments}}</pre></div>{{end}}
{{- end}}
{{- with .Cell}}
<div class="cell {{.Class}}">
<div class="said in"><span class="lbl">{{.Label}}</span><pre>{{.In}}</pre></div>
<div class="said out"><span class="lbl">Out</span><pre>{{range .Out}}{{if .Note}}<span class="hn">{{.Text}}</span>{{else}}{{.Text}}{{end}}{{end}}</pre></div>
<p class="cellmeta">{{join .Meta " · "}}</p>
</div>
{{- end}}
{{- with .Restart}}<p class="restart">⟳ the kernel restarted ({{.Restarts}}): {{.Cause}}{{if .Error}}; {{.Error}}{{end}}</p>{{end}}
{{- with .Outcome}}<div class="result">
{{- with .Answer}}<p><b>Answer</b> <code>{{.Value}}</code> ({{.Source}})</p>{{end}}
{{- with .End}}<p><b>End</b>: {{.Status}} after {{turns .Turns}} · {{.ContextTokens}} context + {{.OutputTokens}} output tokens{{if .CachedTokens}} ({{.CachedTokens}} cached){{end}} · {{seconds .WallMS}}{{with .Answer}} · answer <code>{{.}}</code>{{end}}{{if .AnswerSource}} ({{.AnswerSource}}){{end}}</p>{{if .Error}}<p>error: {{.Error}}</p>{{end}}{{end}}
{{- with .Grade}}<p><b>Grade</b>: <span class="v v-{{.Verdict}}">{{.Verdict}}</span>{{if .Source}} ({{.Source}}){{end}} · gold <code>{{raw .Gold}}</code>{{if .Reason}} · {{.Reason}}{{end}}</p>{{end}}
</div>{{end}}
{{- if .Note}}<p class="tnote">{{.Note}}</p>{{end}}
{{- end}}
</div>
</details>
{{- end}}
`
