package bench

import (
	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
)

// PartScores are a group of trials' scores by part, as InfiAgent-DABench
// reports them for answers that are records of named parts (its ABQ is
// Row.Accuracy): PSAQ, the mean over trials of the share of the task's
// parts that are right, and USAQ, the share of all parts that are right.
// A task that is not a record counts as a record of one part, right when
// the trial is correct. Parts count only where the answer counts in
// accuracy: an unexecuted answer has none right, whatever it said.
type PartScores struct {
	Parts      int     `json:"parts"`       // the gold parts of the graded trials
	PartsRight int     `json:"parts_right"` // of them right
	PSAQ       float64 `json:"psaq"`        // 0 with no graded trial
	USAQ       float64 `json:"usaq"`        // PartsRight / Parts; 0 with no part
}

// HasRecords says the run's tasks include a record (datasets.Record):
// only then do its rows carry PartScores.
func HasRecords(spec Spec) bool {
	for _, t := range spec.TaskList {
		if t.AnswerType == datasets.Record {
			return true
		}
	}
	return false
}

// TrialParts is how many of a graded trial's parts are right, of how
// many: a record task's line has a verdict for every gold part (Parts);
// any other task is one part. See PartScores.
func TrialParts(t Trial) (right, parts int) {
	counts := t.Verdict == string(agent.GradeCorrect) || t.Verdict == string(agent.GradeWrong)
	if len(t.Parts) == 0 {
		if t.Correct {
			return 1, 1
		}
		return 0, 1
	}
	for _, v := range t.Parts {
		if counts && v == string(datasets.PartRight) {
			right++
		}
	}
	return right, len(t.Parts)
}

// ScoreParts are the PartScores of graded trials (a Row's Results).
func ScoreParts(results []Trial) *PartScores {
	var s PartScores
	var shares float64
	for _, t := range results {
		right, n := TrialParts(t)
		s.Parts += n
		s.PartsRight += right
		shares += float64(right) / float64(n)
	}
	if len(results) > 0 {
		s.PSAQ = shares / float64(len(results))
	}
	if s.Parts > 0 {
		s.USAQ = float64(s.PartsRight) / float64(s.Parts)
	}
	return &s
}
