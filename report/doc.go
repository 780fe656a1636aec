// Package report turns a bench run directory into the research's table and
// chart: per (model, condition) accuracy with a Wilson interval, cost with
// bootstrap intervals over tasks, and the attribution of the cost gap layer
// by layer, each layer paired by task. It reads only the run directory
// (run.json, trials.jsonl, trajectories/), so it works on a run made on
// another machine.
//
// Build computes every number once, in a Report; Markdown, HTML and JSON
// only render it, so the three always agree. Intervals come from a fixed
// random seed, so a report of the same run is byte-identical.
//
// # What is counted
//
// Every figure is over the last line of each key (model, condition, task,
// rep). Infrastructure failures (class infra) are counted apart, with
// their own denominator, and left out of accuracy and of the means; a
// budget stop is a model result (wrong) and is counted too. Per-task
// figures are the mean over the task's reps; paired comparisons take the
// tasks both conditions have a model result for.
//
// # The attribution
//
// The seed article's four layers, each the ratio of the later condition to
// the earlier one: representation = B0 / A, working habits = B / B0,
// protocol = D / B, loop = C / D. A ratio is the geometric mean over tasks
// of the per-task ratio of mean context (and output) tokens, with a
// bootstrap interval over tasks; beside it, the paired difference in
// accuracy. A layer whose conditions are not both in the run is left out,
// with a note.
//
// Non-goals: statistics across runs beyond the paired comparison of two,
// significance tests, money in the log (prices come only from --prices).
package report
