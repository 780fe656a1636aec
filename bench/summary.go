package bench

import "github.com/ctxcode/ctxcode/agent"

// Row is the summary of one (model, condition) of a run: what the command
// prints at the end. Means are over the trials with a model result (infra
// failures are counted apart and left out of every other figure).
type Row struct {
	Model     string `json:"model"`
	Condition string `json:"condition"`
	// Trials is the number of keys with a line; Infra of them ended in an
	// infra failure (their last line), Graded = Trials - Infra.
	Trials  int `json:"trials"`
	Infra   int `json:"infra"`
	Graded  int `json:"graded"`
	Correct int `json:"correct"`
	// Accuracy is Correct / Graded; 0 when nothing was graded.
	Accuracy float64 `json:"accuracy"`
	// Unexecuted answers are graded but never correct; UnexecutedRight of
	// them matched the gold.
	Unexecuted      int `json:"unexecuted"`
	UnexecutedRight int `json:"unexecuted_right"`
	// Literal answers (ANSWER of a value typed in the cell) count in
	// accuracy as executed answers; LiteralRight of them matched the gold.
	Literal       int     `json:"literal,omitempty"`
	LiteralRight  int     `json:"literal_right,omitempty"`
	BudgetStops   int     `json:"budget_stops"`
	KernelDied    int     `json:"kernel_died"` // trials whose own code killed the kernel: graded, wrong
	Turns         float64 `json:"mean_turns"`
	ContextTokens float64 `json:"mean_context_tokens"`
	OutputTokens  float64 `json:"mean_output_tokens"`
	CachedTokens  float64 `json:"mean_cached_tokens"`
	WallMS        float64 `json:"mean_wall_ms"`
	KernelMS      float64 `json:"mean_kernel_ms"`
	// PoolWaitMS is the mean wait for a pooled kernel, apart from WallMS.
	PoolWaitMS float64 `json:"mean_pool_wait_ms"`
	Estimated  bool    `json:"estimated"`
}

// Summarize sums the final lines of a run per (model, condition), in the
// order they first appear.
func Summarize(final []Trial) []Row {
	type id struct{ model, cond string }
	var rows []*Row
	byID := map[id]*Row{}
	for _, t := range final {
		x := byID[id{t.Model, t.Condition}]
		if x == nil {
			x = &Row{Model: t.Model, Condition: t.Condition}
			byID[id{t.Model, t.Condition}] = x
			rows = append(rows, x)
		}
		x.Trials++
		if t.Class == ClassInfra {
			x.Infra++
			continue
		}
		x.Graded++
		if t.Correct {
			x.Correct++
		}
		if t.Verdict == "unexecuted" {
			x.Unexecuted++
			if t.AnswerRight {
				x.UnexecutedRight++
			}
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
		x.WallMS += float64(t.WallMS)
		x.KernelMS += float64(t.KernelMS)
		x.PoolWaitMS += float64(t.PoolWaitMS)
		x.Estimated = x.Estimated || t.Estimated
	}
	out := make([]Row, len(rows))
	for i, x := range rows {
		if n := float64(x.Graded); n > 0 {
			x.Accuracy = float64(x.Correct) / n
			x.Turns, x.ContextTokens, x.OutputTokens, x.CachedTokens = x.Turns/n, x.ContextTokens/n, x.OutputTokens/n, x.CachedTokens/n
			x.WallMS, x.KernelMS, x.PoolWaitMS = x.WallMS/n, x.KernelMS/n, x.PoolWaitMS/n
		}
		out[i] = *x
	}
	return out
}
