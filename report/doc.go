// Package report turns a bench run directory into the research's table and
// charts: per (model, condition) accuracy and cost, each with a 95%
// interval over tasks, and the attribution of the cost gap layer by layer,
// each layer paired by task. It reads only the run directory
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
// tasks both conditions have a model result for, and name the tasks they
// could not pair and the pairs a ratio left out (0 tokens: Dropped).
//
// # Intervals
//
// Every interval is over tasks, never over trials: a task's reps share a
// question and, with greedy decoding, often an answer, so ten reps are not
// ten observations, and repeating every rep leaves every interval as it
// was. Tokens, turns and time: the mean with a cluster bootstrap (tasks
// drawn with replacement, each with all its trials; Describe). Accuracy:
// the share of correct trials, with the Wilson interval at the effective
// number of independent trials that bootstrap's variance gives, never more
// than the number of tasks (TaskAccuracy), so that a row all right or all
// wrong, where the bootstrap has no spread, keeps the width its number of
// tasks leaves. The paired accuracy
// difference: the mean per-task difference, with the wider of a bootstrap
// over tasks and Newcombe's score interval for paired proportions over the
// tasks (PairedAccuracyDiff), for the same reason. An interval over fewer
// than two tasks is no interval: the pages print "n < 2" and JSON has lo
// and hi null (Interval.Tasks, Dist.Tasks). A table over fewer than 100
// tasks carries a power note: the smallest accuracy difference a two-sided
// test at 5% detects with 80% power, 1.98/sqrt(n) for two conditions near
// 50% that fail tasks independently (MinDetectableDiff), an upper bound
// where conditions fail the same tasks.
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
// # Sessions
//
// A run of session trials (staged workloads: bench.Trial.Stages) gets
// Report.Sessions, per (model, condition) and stage (sessions.go): the
// accuracy at stage k (a session that ended before k is not right at
// k), W(n), the mean cumulative input tokens at stage n over the
// sessions that reached it, and CC_q(n), seed 000's smallest budget with
// which a share q of sessions passes stages 1..n, a Kaplan–Meier quantile
// in which sessions cut by a budget are censored and sessions that failed
// a check never pass (ccn.go). Infra trials are left out. A run without
// session trials has no such section.
//
// Non-goals: statistics across runs beyond the paired comparison of two,
// significance tests (the power note says what a table can tell apart, and
// tests nothing), money in the log (prices come only from --prices).
package report
