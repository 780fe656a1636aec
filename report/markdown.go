package report

import (
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"

	"github.com/ctxcode/ctxcode/bench"
)

// Markdown writes rep as GitHub-flavoured Markdown, marked as ctxcode's
// (bench.GeneratedMark) in a comment on its first line. runLinks are the
// paths from the Markdown file's folder to the run directories, the first
// run's then the second's, for the links to each trial's trajectory; one
// left out or "" links none of that run's. With two runs, the sections
// that cover the first run only (the attribution, the comparisons with the
// baseline) say so in their titles, and each run has its per-task table.
func Markdown(w io.Writer, rep *Report, runLinks ...string) error {
	var b strings.Builder
	b.WriteString("<!-- ctxcode report: a later report replaces this file only while it is unchanged; " + bench.GeneratedMark + " -->\n")
	b.WriteString("# ctxcode report\n\n")
	for i, r := range rep.Runs {
		label := "Run"
		if len(rep.Runs) > 1 {
			label = fmt.Sprintf("Run %d", i+1)
		}
		fmt.Fprintf(&b, "**%s** `%s`: models %s; conditions %s; %d tasks (%s) × %d reps; %d of %d trials have a result (%d lines); sandbox %s; ctxcode %s, started %s.\n\n",
			label, r.Dir, strings.Join(r.Models, ", "), strings.Join(r.Conditions, ", "), r.Tasks, r.TaskSource, r.Reps,
			r.Keys, r.Expected, r.Lines, r.Sandbox, r.Version, r.Created)
	}

	b.WriteString("## The ladder\n\n")
	b.WriteString(ladderMethod + "\n\n")
	many := len(rep.Runs) > 1
	head := []string{"model", "condition", "trials", "accuracy", "infra", "budget stops", "kernel deaths", "answers (exec/stated/unexec/none)",
		"turns", "context tokens", "output tokens", "cached tokens", "wall"}
	if many {
		head = append([]string{"run"}, head...)
	}
	money := false
	for _, r := range rep.Rows {
		money = money || r.Money != nil
	}
	if money {
		head = append(head, "USD per trial", "USD in all", "cache saved")
	}
	table(&b, head, len(head))
	for _, r := range rep.Rows {
		cells := []string{r.Model, r.Condition, fmt.Sprint(r.Trials), accuracy(r.Correct, r.Graded, r.Accuracy),
			fmt.Sprint(r.Infra), fmt.Sprint(r.BudgetStops), fmt.Sprint(r.KernelDied),
			fmt.Sprintf("%d/%d/%d/%d", r.Sources.Executed, r.Sources.Stated, r.Sources.Unexecuted, r.Sources.None),
			dist(r.Turns, 2), dist(r.Context, 0), dist(r.Output, 0), dist(r.Cached, 0), wallSeconds(r.WallMS)}
		if many {
			cells = append([]string{fmt.Sprint(r.Run + 1)}, cells...)
		}
		if money {
			if m := r.Money; m != nil {
				cells = append(cells, fmt.Sprintf("%.5f", m.MeanUSD), fmt.Sprintf("%.4f", m.TotalUSD), fmt.Sprintf("%.4f", m.CacheSavedUSD))
			} else {
				cells = append(cells, "", "", "")
			}
		}
		row(&b, cells)
	}
	for _, r := range rep.Rows {
		if r.Estimated {
			b.WriteString("\nToken counts are estimated by the tokenizer where the model reported none.\n")
			break
		}
	}
	for _, n := range ladderPower(rep) {
		b.WriteString("\n" + n + "\n")
	}
	b.WriteString(literalNote(rep.Rows, "\n", "\n"))
	if n := poolWaitNote(rep.Rows); n != "" {
		b.WriteString("\n" + n + "\n")
	}
	recordsMarkdown(&b, rep)
	sessionsMarkdown(&b, rep)

	s := sectionTitles(rep)
	if len(rep.Layers) > 0 {
		b.WriteString("\n## " + s.Layers + "\n\n")
		b.WriteString(layersMethod + "\n\n")
		comparisons(&b, rep.Layers, "layer")
	}
	if len(rep.Versus) > 0 {
		b.WriteString("\n## " + s.Versus + "\n\n")
		comparisons(&b, rep.Versus, "comparison")
	}
	if len(rep.Pairs) > 0 {
		b.WriteString("\n## " + s.Pairs + "\n\n")
		comparisons(&b, rep.Pairs, "condition")
	}

	for i, tasks := range [][]TaskRow{rep.Tasks, rep.SecondTasks} {
		if len(tasks) == 0 {
			continue
		}
		link := ""
		if i < len(runLinks) {
			link = runLinks[i]
		}
		b.WriteString("\n## " + s.tasks[i] + "\n\n")
		b.WriteString("Correct of the reps with a model result, mean turns, mean context tokens")
		if link != "" {
			b.WriteString("; each rep links to its trajectory")
		}
		b.WriteString(".\n\n")
		head := []string{"task"}
		for _, c := range tasks[0].Cells {
			head = append(head, cellLabel(c, rep, i))
		}
		table(&b, head, len(head))
		for _, t := range tasks {
			cells := []string{t.Task}
			for _, c := range t.Cells {
				cells = append(cells, taskCell(c, link))
			}
			row(&b, cells)
		}
	}
	if len(rep.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range rep.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	_, err := w.Write(bench.Stamp([]byte(b.String())))
	return err
}

// titles are the titles of the sections after the ladder: with two runs,
// those of the first run only say so.
type titles struct {
	Layers, Versus, Pairs string
	tasks                 [2]string // per task, of each run
}

func sectionTitles(rep *Report) titles {
	t := titles{Layers: "The attribution, paired by task",
		Versus: fmt.Sprintf("Every condition against %s, paired by task", rep.Baseline),
		Pairs:  "The second run against the first, paired by (condition, task)",
		tasks:  [2]string{"Per task", "Per task"}}
	if len(rep.Runs) > 1 {
		t.Layers = "The attribution of run 1 only, paired by task"
		t.Versus = fmt.Sprintf("Every condition against %s, run 1 only, paired by task", rep.Baseline)
		t.tasks = [2]string{"Per task, run 1", "Per task, run 2"}
	}
	return t
}

// cellLabel is the head of a per-task column of run: its condition, and
// its model when run has several.
func cellLabel(c TaskCell, rep *Report, run int) string {
	models := map[string]bool{}
	for _, r := range rep.Rows {
		if r.Run == run {
			models[r.Model] = true
		}
	}
	if len(models) > 1 {
		return c.Model + " " + c.Condition
	}
	return c.Condition
}

func taskCell(c TaskCell, runLink string) string {
	s := fmt.Sprintf("%d/%d · %.1f turns · %.0f", c.Correct, c.Reps, c.Turns, c.Context)
	if c.Reps == 0 {
		s = "no result"
	}
	if c.Infra > 0 {
		s += fmt.Sprintf(" · %d infra", c.Infra)
	}
	if runLink != "" {
		var links []string
		for i, t := range c.Trials {
			if t == "" { // no trajectory was recorded
				links = append(links, fmt.Sprintf("r%d", i+1))
				continue
			}
			links = append(links, fmt.Sprintf("[r%d](%s)", i+1, path.Join(runLink, t)))
			if i < len(c.Notebooks) && c.Notebooks[i] != "" {
				links = append(links, fmt.Sprintf("([nb](%s))", path.Join(runLink, c.Notebooks[i])))
			}
		}
		if len(links) > 0 {
			s += " · " + strings.Join(links, " ")
		}
	}
	return s
}

func comparisons(b *strings.Builder, cs []Comparison, first string) {
	table(b, []string{first, "model", "from → to", "tasks", "context ratio", "output ratio", "accuracy difference"}, 7)
	for _, c := range cs {
		model := c.Model
		if c.FromModel != "" {
			model = c.FromModel + " → " + c.Model
		}
		row(b, []string{c.Name, model, c.From + " → " + c.To, fmt.Sprint(c.Tasks),
			ratio(c.Context, c.Tasks), ratio(c.Output, c.Tasks), diff(c.Accuracy, c.Tasks)})
	}
	var dropped []string
	for _, c := range cs {
		if d := droppedNote(c); d != "" {
			dropped = append(dropped, d)
		}
	}
	if len(dropped) > 0 {
		b.WriteString("\nDropped pairs:\n\n")
		for _, d := range dropped {
			b.WriteString("- " + d + "\n")
		}
	}
	if n := powerNote(fewestTasks(cs), true, ""); n != "" {
		b.WriteString("\n" + n + "\n")
	}
}

// The texts that say how the numbers were made, the same on both pages.
const (
	// ladderMethod introduces the ladder.
	ladderMethod = "Accuracy is the share of correct trials among those with a model result, with a 95% interval over tasks, not trials (a task's reps are not independent): " +
		"a Wilson interval at the effective number of independent trials, p(1−p) over the variance of a bootstrap that draws tasks with all their reps, and never more than the number of tasks, " +
		"so repeated reps of the same answers do not narrow it and a row that is all right or all wrong keeps a width. " +
		"Tokens and time: the mean [bootstrap 95% interval over tasks] (median; IQR). " +
		"An interval over fewer than two tasks is shown as n < 2. Infrastructure failures are counted apart and left out of every other figure."
	// layersMethod introduces the attribution (and holds for every
	// comparison).
	layersMethod = "Each layer is the later condition against the earlier one: the geometric mean over tasks of the per-task ratio of mean tokens [bootstrap 95% interval over tasks], " +
		"and the paired difference in accuracy [95% interval: the wider at each end of a bootstrap over tasks and Newcombe's score interval for paired proportions with each task counted once, " +
		"so tasks that come out the same in both conditions do not make a difference of zero certain]. A ratio below 1 is a saving; a pair that cannot be compared is dropped, and said so under the table."
	// noInterval stands for an interval over fewer than two tasks.
	noInterval = "n < 2"
	// powerNoteTasks: a table over fewer tasks carries a power note.
	powerNoteTasks = 100
)

// powerNote is the line under a table over n tasks that says what
// difference in accuracy it can tell apart (MinDetectableDiff), "" for
// n >= powerNoteTasks or none. The ladder's states the rule; a comparison
// table's (paired) refers to it. run names the run, "" for none.
func powerNote(n int, paired bool, run string) string {
	if n <= 0 || n >= powerNoteTasks {
		return ""
	}
	head := "Power"
	if run != "" {
		head += " (" + run + ")"
	}
	tasks := plural(n, "task")
	if paired {
		tasks = plural(n, "paired task")
	}
	d := MinDetectableDiff(n)
	rule := fmt.Sprintf("a two-sided test at the 5%% level detects a difference with 80%% power when it is at least (1.96 + 0.84)·√(0.5/n) = 1.98/√%d = %.0f pp, "+
		"for two conditions near 50%% accuracy that fail tasks independently; conditions that fail the same tasks tell smaller differences apart", n, 100*d)
	if paired {
		rule = fmt.Sprintf("1.98/√%d = %.0f pp, the rule under the ladder", n, 100*d)
	}
	if d >= 1 {
		return fmt.Sprintf("%s: with %s no difference in accuracy can be told apart reliably (%s).", head, tasks, rule)
	}
	return fmt.Sprintf("%s: with %s, a difference in accuracy smaller than about %.0f pp is likely to go unseen (%s).", head, tasks, 100*d, rule)
}

// ladderPower are the ladder's power notes: one, or one per run when the
// runs have different numbers of tasks.
func ladderPower(rep *Report) []string {
	same := true
	for _, r := range rep.Runs {
		same = same && r.Tasks == rep.Runs[0].Tasks
	}
	var notes []string
	for i, r := range rep.Runs {
		switch {
		case same && i > 0:
		case same:
			notes = append(notes, powerNote(r.Tasks, false, ""))
		default:
			notes = append(notes, powerNote(r.Tasks, false, r.Dir))
		}
	}
	return slices.DeleteFunc(notes, func(n string) bool { return n == "" })
}

// fewestTasks is the fewest tasks a comparison of cs paired, 0 for none.
func fewestTasks(cs []Comparison) int {
	n := 0
	for i, c := range cs {
		if i == 0 || c.Tasks < n {
			n = c.Tasks
		}
	}
	return n
}

// droppedNote says what comparison c left out and why, "" when nothing.
func droppedNote(c Comparison) string {
	d := c.Dropped
	if !d.Any() {
		return ""
	}
	var parts []string
	if n := len(d.NoResult); n > 0 {
		parts = append(parts, fmt.Sprintf("%s of %d not paired, with no trial with a model result in %s or %s (%s)",
			plural(n, "task"), n+c.Tasks, c.From, c.To, someIDs(d.NoResult)))
	}
	for _, z := range []struct {
		n    int
		what string
	}{{d.ZeroContext, "context"}, {d.ZeroOutput, "output"}} {
		if z.n > 0 {
			parts = append(parts, fmt.Sprintf("%s of %d left out of the %s ratio, with 0 %s tokens in %s or %s",
				plural(z.n, "pair"), c.Tasks, z.what, z.what, c.From, c.To))
		}
	}
	return fmt.Sprintf("%s (%s → %s): %s.", c.Name, c.From, c.To, strings.Join(parts, "; "))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func table(b *strings.Builder, head []string, n int) {
	row(b, head)
	seps := make([]string, n)
	for i := range seps {
		seps[i] = "---"
	}
	row(b, seps)
}

func row(b *strings.Builder, cells []string) {
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

func accuracy(k, n int, iv Interval) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%d/%d = %.0f%% [%s]", k, n, 100*iv.Est, bracket(iv.Tasks, "%.0f", 100*iv.Lo, 100*iv.Hi))
}

// bracket is an interval's bounds in format, "lo, hi", or noInterval over
// fewer than two tasks.
func bracket(tasks int, format string, lo, hi float64) string {
	if tasks < 2 {
		return noInterval
	}
	return fmt.Sprintf(format+", "+format, lo, hi)
}

func dist(d Dist, prec int) string {
	if d.N == 0 {
		return "–"
	}
	f := func(x float64) string { return fmt.Sprintf("%.*f", prec, x) }
	return fmt.Sprintf("%s [%s] (%s; %s–%s)", f(d.Mean), bracket(d.Tasks, fmt.Sprintf("%%.%df", prec), d.Lo, d.Hi), f(d.Median), f(d.Q1), f(d.Q3))
}

func wallSeconds(d Dist) string {
	if d.N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fs [%s]", d.Mean/1000, bracket(d.Tasks, "%.2f", d.Lo/1000, d.Hi/1000))
}

func ratio(iv Interval, n int) string {
	if n == 0 || iv.Tasks == 0 || math.IsNaN(iv.Est) {
		return "–"
	}
	return fmt.Sprintf("%.3f [%s]", iv.Est, bracket(iv.Tasks, "%.3f", iv.Lo, iv.Hi))
}

func diff(iv Interval, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%+.0f pp [%s]", 100*iv.Est, bracket(iv.Tasks, "%+.0f", 100*iv.Lo, 100*iv.Hi))
}

// literalNote is one line per row with literal answers (ANSWER of a value
// typed in the cell), each between before and after; "" when no row has
// one.
func literalNote(rows []Row, before, after string) string {
	var b strings.Builder
	for _, r := range rows {
		if r.Sources.Literal > 0 {
			fmt.Fprintf(&b, "%s%s %s: %d literal answer(s), %d of them right: ANSWER of a value typed in the cell, not computed there; counted in accuracy as executed answers.%s",
				before, r.Model, r.Condition, r.Sources.Literal, r.Sources.LiteralRight, after)
		}
	}
	return b.String()
}

// poolWaitNote is the line that gives the rows' wait for a pooled kernel,
// which wall leaves out; "" when no trial waited.
func poolWaitNote(rows []Row) string {
	var waits []string
	for _, r := range rows {
		if d := r.PoolWaitMS; d != nil {
			waits = append(waits, fmt.Sprintf("%s %s %.2fs (median %.2fs)", r.Model, r.Condition, d.Mean/1000, d.Median/1000))
		}
	}
	if len(waits) == 0 {
		return ""
	}
	return "Waiting for a pooled kernel, apart from wall (the harness's time, mean per trial): " + strings.Join(waits, "; ") + "."
}
