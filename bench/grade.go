package bench

import (
	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
)

// grade grades a run's answer against task (datasets.Assess), keeps the
// grade in res.Grade, with a record's part verdicts, and writes it to the
// trajectory. It is where bench's trials and ask --task are graded. A run
// without an answer has every part of a record missing.
func grade(task *datasets.Task, res *agent.Result, traj *agent.Trajectory) *agent.Grade {
	var a datasets.Assessment
	if res.Status == agent.Answered {
		a = datasets.Assess(*task, res.Answer)
	} else if task.AnswerType == datasets.Record {
		a.Parts = datasets.Assess(*task, "").Parts
	}
	g := res.SetGrade(a.Correct, a.Reason)
	if a.Parts != nil {
		g.Parts = make(map[string]string, len(a.Parts))
		for name, v := range a.Parts {
			g.Parts[name] = string(v)
		}
		g.ExtraParts = a.Extra
	}
	traj.Grade(task.ID, task.Gold, g)
	return g
}
