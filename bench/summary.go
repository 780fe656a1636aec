package bench

import "github.com/ctxcode/ctxcode/agent"

// Row is the numbers of a group of final lines: one (model, condition) of
// a run (Summarize), or any other group (Sum: a task's reps in the
// report's per-task table). It is the one aggregation of a run: bench's
// end-of-run table prints it, and the report shows its counts and means,
// adding only intervals, medians and money over Results.
//
// Infra failures are counted apart (Infra) and left out of every other
// figure: the counts, the accuracy and the means are over the graded
// trials (Results), those with a model result.
type Row struct {
	Model     string `json:"model"`
	Condition string `json:"condition"`
	Counts
	// Accuracy is Correct / Graded; 0 when nothing was graded.
	Accuracy float64 `json:"accuracy"`
	Sources
	BudgetStops int `json:"budget_stops"`
	KernelDied  int `json:"kernel_died"` // trials whose own code killed the kernel: graded, wrong
	// The means per graded trial; 0 when nothing was graded.
	Turns           float64 `json:"mean_turns"`
	ContextTokens   float64 `json:"mean_context_tokens"`
	OutputTokens    float64 `json:"mean_output_tokens"`
	CachedTokens    float64 `json:"mean_cached_tokens"`
	ReasoningTokens float64 `json:"mean_reasoning_tokens"`
	WallMS          float64 `json:"mean_wall_ms"`
	KernelMS        float64 `json:"mean_kernel_ms"`
	// PoolWaitMS is the mean wait for a pooled kernel, apart from WallMS.
	PoolWaitMS float64 `json:"mean_pool_wait_ms"`
	// Estimated says a graded trial's token counts were estimated by the
	// tokenizer (the model reported none).
	Estimated bool `json:"estimated"`
	// Results are the graded trials, in the order of the lines: what the
	// counts and means are over, and what a report draws its intervals
	// and medians from.
	Results []Trial `json:"-"`

	// Records are the scores by part, when the run has record tasks
	// (HasRecords); nil otherwise.
	Records *PartScores `json:"records,omitempty"`
}

// Counts are the trials of a Row. In JSON its fields stand in the Row's
// (and in the report's row, which shows them as they are).
type Counts struct {
	// Trials is the number of keys with a line; Infra of them ended in an
	// infra failure (their last line), Graded = Trials - Infra of them
	// have a model result, Correct of those count in accuracy.
	Trials  int `json:"trials"`
	Infra   int `json:"infra"`
	Graded  int `json:"graded"`
	Correct int `json:"correct"`
}

// Sources counts the graded trials by where their answer came from
// (Trial.AnswerSource). In JSON its fields stand in the Row's.
type Sources struct {
	Executed int `json:"executed"`
	Stated   int `json:"stated"`
	// Unexecuted answers are graded but never correct; UnexecutedRight of
	// them matched the gold.
	Unexecuted      int `json:"unexecuted"`
	UnexecutedRight int `json:"unexecuted_right"`
	None            int `json:"none"` // no answer
	// Literal counts the executed answers whose ANSWER passed a value typed
	// in the cell (also in Executed, and in accuracy); LiteralRight of them
	// matched the gold.
	Literal      int `json:"literal,omitempty"`
	LiteralRight int `json:"literal_right,omitempty"`
}

// Summarize is the Row of each (model, condition) of spec, in spec's
// order (each model's conditions in turn), summed over final, the last
// line of every key (Final). A pair with no line yet has a Row of zero
// trials. Lines of a pair spec does not name are not counted (a run
// directory holds none: it refuses a run of another spec).
func Summarize(spec Spec, final []Trial) []Row {
	type id struct{ model, cond string }
	at := map[id]int{}
	groups := make([][]Trial, 0, len(spec.Models)*len(spec.Conditions))
	for _, m := range spec.Models {
		for _, c := range spec.Conditions {
			at[id{m.Name, c.Name}] = len(groups)
			groups = append(groups, nil)
		}
	}
	for _, t := range final {
		if i, ok := at[id{t.Model, t.Condition}]; ok {
			groups[i] = append(groups[i], t)
		}
	}
	rows := make([]Row, 0, len(groups))
	records := HasRecords(spec)
	for _, m := range spec.Models {
		for _, c := range spec.Conditions {
			r := Sum(groups[at[id{m.Name, c.Name}]])
			r.Model, r.Condition = m.Name, c.Name
			if records {
				r.Records = ScoreParts(r.Results)
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// Sum is the Row of trials, final lines of one group, whatever their model
// and condition: its Model and Condition are left empty.
func Sum(trials []Trial) Row {
	var x Row
	for _, t := range trials {
		x.Trials++
		if t.Class == ClassInfra {
			x.Infra++
			continue
		}
		x.Graded++
		x.Results = append(x.Results, t)
		if t.Correct {
			x.Correct++
		}
		switch t.AnswerSource {
		case agent.Executed:
			x.Executed++
		case agent.Stated:
			x.Stated++
		case agent.Unexecuted:
			x.Unexecuted++
			if t.AnswerRight {
				x.UnexecutedRight++
			}
		default:
			x.None++
		}
		if t.Literal {
			x.Literal++
			if t.AnswerRight {
				x.LiteralRight++
			}
		}
		if t.BudgetStop() {
			x.BudgetStops++
		}
		if t.Status == agent.KernelDied {
			x.KernelDied++
		}
		x.Turns += float64(t.Turns)
		x.ContextTokens += float64(t.ContextTokens)
		x.OutputTokens += float64(t.OutputTokens)
		x.CachedTokens += float64(t.CachedTokens)
		x.ReasoningTokens += float64(t.ReasoningTokens)
		x.WallMS += float64(t.WallMS)
		x.KernelMS += float64(t.KernelMS)
		x.PoolWaitMS += float64(t.PoolWaitMS)
		x.Estimated = x.Estimated || t.Estimated
	}
	if n := float64(x.Graded); n > 0 {
		x.Accuracy = float64(x.Correct) / n
		x.Turns, x.ContextTokens, x.OutputTokens, x.CachedTokens = x.Turns/n, x.ContextTokens/n, x.OutputTokens/n, x.CachedTokens/n
		x.ReasoningTokens, x.WallMS, x.KernelMS, x.PoolWaitMS = x.ReasoningTokens/n, x.WallMS/n, x.KernelMS/n, x.PoolWaitMS/n
	}
	return x
}
