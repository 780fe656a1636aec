package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"slices"
	"strconv"
	"strings"

	"github.com/ctxcode/ctxcode/bench"
)

// RecordScores are a row's scores as InfiAgent-DABench reports them for
// answers that are records of named parts (bench.PartScores): ABQ, the
// accuracy by question (every part right: the row's accuracy), PSAQ, the
// mean over trials of the share of a task's parts that are right, and
// USAQ, the share of all parts that are right. Each has a 95% interval
// over tasks: ABQ and USAQ are TaskAccuracy's (USAQ over the parts, each
// in its task's cluster), PSAQ is TaskShare's.
type RecordScores struct {
	ABQ        Interval `json:"abq"`
	PSAQ       Interval `json:"psaq"`
	USAQ       Interval `json:"usaq"`
	Parts      int      `json:"parts"`
	PartsRight int      `json:"parts_right"`
}

// recordScores are the RecordScores of a row's graded trials, results,
// groups[i] the task of results[i], abq the row's accuracy. The bootstraps
// draw from a generator of their own, so that the row's other figures stay
// as they are.
func recordScores(results []bench.Trial, groups []int, abq Interval) *RecordScores {
	rs := &RecordScores{ABQ: abq}
	shares := make([]float64, len(results))
	var parts []bool
	var partGroups []int
	for i, t := range results {
		right, n := bench.TrialParts(t)
		shares[i] = float64(right) / float64(n)
		rs.Parts += n
		rs.PartsRight += right
		for k := range n {
			parts = append(parts, k < right)
			partGroups = append(partGroups, groups[i])
		}
	}
	rng := NewRand(Seed)
	rs.PSAQ = TaskShare(shares, groups, rng, Resamples)
	rs.USAQ = TaskAccuracy(parts, partGroups, rng, Resamples)
	return rs
}

// Breakdown is the results by the values of a field of the tasks' meta
// (report --by FIELD): per value, each (model, condition)'s accuracy and,
// in a run with record tasks, its scores by part. A task whose field is a
// list is in the group of each of its elements; a task without the field
// is in the group NoValue.
type Breakdown struct {
	Field string     `json:"field"`
	Rows  []GroupRow `json:"rows"`
}

// NoValue is the group of the tasks a Breakdown's field is missing from.
const NoValue = "(none)"

// GroupRow is one (model, condition) of a run over the tasks of one value.
type GroupRow struct {
	Value     string `json:"value"`
	Run       int    `json:"run"` // index in Report.Runs
	Model     string `json:"model"`
	Condition string `json:"condition"`
	Tasks     int    `json:"tasks"` // the run's tasks in the group
	bench.Counts
	Accuracy Interval      `json:"accuracy"`
	Records  *RecordScores `json:"records,omitempty"`
}

// breakdown is the Breakdown of runs by field. A field no task of the runs
// has is an *InputError that names the fields there are.
func breakdown(runs []*Run, field string) (*Breakdown, error) {
	var fields []string
	found := false
	for _, r := range runs {
		for _, t := range r.Spec.TaskList {
			for k := range t.Meta {
				fields = append(fields, k)
				found = found || k == field
			}
		}
	}
	if !found {
		slices.Sort(fields)
		fields = slices.Compact(fields)
		if len(fields) == 0 {
			return nil, &InputError{fmt.Sprintf("--by %s: the run's tasks have no meta to group by (a task file's \"meta\" object, such as {\"level\": \"hard\"})", field)}
		}
		return nil, &InputError{fmt.Sprintf("--by %s: no task has the meta field %q; the fields there are: %s", field, field, strings.Join(fields, ", "))}
	}
	b := &Breakdown{Field: field, Rows: []GroupRow{}}
	for i, r := range runs {
		byValue := map[string]map[string]bool{} // value -> task ids
		for _, t := range r.Spec.TaskList {
			for _, v := range metaValues(t.Meta, field) {
				if byValue[v] == nil {
					byValue[v] = map[string]bool{}
				}
				byValue[v][t.ID] = true
			}
		}
		values := make([]string, 0, len(byValue))
		for v := range byValue {
			values = append(values, v)
		}
		slices.SortFunc(values, func(a, b string) int {
			if (a == NoValue) != (b == NoValue) { // the tasks without the field last
				if a == NoValue {
					return 1
				}
				return -1
			}
			return strings.Compare(a, b)
		})
		idx := taskIndex(r)
		for _, v := range values {
			in := byValue[v]
			var final []bench.Trial
			for _, t := range r.Final {
				if in[t.Task] {
					final = append(final, t)
				}
			}
			for _, s := range bench.Summarize(r.Spec, final) {
				g := GroupRow{Value: v, Run: i, Model: s.Model, Condition: s.Condition, Tasks: len(in), Counts: s.Counts}
				groups := make([]int, len(s.Results))
				correct := make([]bool, len(s.Results))
				for j, t := range s.Results {
					groups[j], correct[j] = idx[t.Task], t.Correct
				}
				g.Accuracy = TaskAccuracy(correct, groups, NewRand(Seed), Resamples)
				if s.Records != nil {
					g.Records = recordScores(s.Results, groups, g.Accuracy)
				}
				b.Rows = append(b.Rows, g)
			}
		}
	}
	return b, nil
}

// metaValues are the groups a task with meta is in by field: the field's
// value as text, each element of a list, NoValue without the field (or
// with null or an empty list).
func metaValues(meta map[string]any, field string) []string {
	var out []string
	add := func(v any) {
		var s string
		switch v := v.(type) {
		case nil:
			return
		case string:
			s = v
		case float64:
			s = strconv.FormatFloat(v, 'f', -1, 64)
		case bool:
			s = strconv.FormatBool(v)
		default:
			b, _ := json.Marshal(v)
			s = string(b)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	switch v := meta[field].(type) {
	case []any:
		for _, x := range v {
			add(x)
		}
	default:
		add(v)
	}
	if len(out) == 0 {
		return []string{NoValue}
	}
	return out
}

// recordsMethod says what the scores by part are.
const recordsMethod = "The run's tasks include records of named parts, graded part by part as InfiAgent-DABench does: " +
	"ABQ is the accuracy by question (every part right: the ladder's accuracy), PSAQ the mean over trials of the share of a question's parts that are right, " +
	"USAQ the share of all parts that are right. A task that is not a record counts as one part; an unexecuted answer has no part right. " +
	"95% intervals over tasks."

// hasRecordRows says rows carry scores by part.
func hasRecordRows(rows []Row) bool {
	return len(rows) > 0 && rows[0].Records != nil
}

// byRecords says a breakdown's rows carry scores by part.
func byRecords(b *Breakdown) bool {
	for _, r := range b.Rows {
		if r.Records != nil {
			return true
		}
	}
	return false
}

// share is a share with its interval, "62% [48, 75]".
func share(iv Interval, n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f%% [%s]", 100*iv.Est, bracket(iv.Tasks, "%.0f", 100*iv.Lo, 100*iv.Hi))
}

// recordsMarkdown writes the section of the scores by part, and the
// breakdown by a meta field, each when the report has it.
func recordsMarkdown(b *strings.Builder, rep *Report) {
	many := len(rep.Runs) > 1
	if hasRecordRows(rep.Rows) {
		b.WriteString("\n## Answers by part\n\n")
		b.WriteString(recordsMethod + "\n\n")
		head := []string{"model", "condition", "ABQ", "PSAQ", "USAQ", "parts right"}
		if many {
			head = append([]string{"run"}, head...)
		}
		table(b, head, len(head))
		for _, r := range rep.Rows {
			if r.Records == nil {
				continue
			}
			rs := r.Records
			cells := []string{r.Model, r.Condition, accuracy(r.Correct, r.Graded, rs.ABQ), share(rs.PSAQ, r.Graded), share(rs.USAQ, rs.Parts),
				fmt.Sprintf("%d/%d", rs.PartsRight, rs.Parts)}
			if many {
				cells = append([]string{fmt.Sprint(r.Run + 1)}, cells...)
			}
			row(b, cells)
		}
	}
	if by := rep.By; by != nil {
		fmt.Fprintf(b, "\n## By %s\n\n", by.Field)
		b.WriteString(byMethod(by) + "\n\n")
		recs := byRecords(by)
		head := []string{by.Field, "tasks", "model", "condition", "accuracy"}
		if recs {
			head = append(head, "PSAQ", "USAQ")
		}
		if many {
			head = append([]string{"run"}, head...)
		}
		table(b, head, len(head))
		for _, g := range by.Rows {
			cells := []string{g.Value, fmt.Sprint(g.Tasks), g.Model, g.Condition, accuracy(g.Correct, g.Graded, g.Accuracy)}
			if recs {
				if rs := g.Records; rs != nil {
					cells = append(cells, share(rs.PSAQ, g.Graded), share(rs.USAQ, rs.Parts))
				} else {
					cells = append(cells, "", "")
				}
			}
			if many {
				cells = append([]string{fmt.Sprint(g.Run + 1)}, cells...)
			}
			row(b, cells)
		}
	}
}

// byMethod says how a breakdown groups the tasks.
func byMethod(by *Breakdown) string {
	return fmt.Sprintf("Results by the tasks' meta field %q: a task whose field is a list is in the group of each of its values, a task without it in %s; "+
		"accuracy with a 95%% interval over the group's tasks.", by.Field, NoValue)
}

// recordFuncs are the HTML template's functions for the scores by part
// and the breakdown.
var recordFuncs = template.FuncMap{
	"recordRows":    hasRecordRows,
	"recordsMethod": func() string { return recordsMethod },
	"byRecords":     byRecords,
	"byMethod":      byMethod,
	"share": func(iv Interval, n int) template.HTML {
		if n == 0 {
			return "–"
		}
		return template.HTML(fmt.Sprintf(`<b>%.0f%%</b> <span class="ci">[%s]</span>`, 100*iv.Est, bracketHTML(iv.Tasks, "%.0f", 100*iv.Lo, 100*iv.Hi)))
	},
}
