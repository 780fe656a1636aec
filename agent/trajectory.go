package agent

import (
	"io"

	"github.com/ctxcode/ctxcode/session"
)

// Trajectory writes a run as it happens, through the trajectory schema's
// one writer (session.TrajectoryWriter; the event types and their order
// are documented there). A nil *Trajectory writes nothing. The prefix
// event comes before the first call event, even when that call went out
// while the prefix was building.
type Trajectory struct {
	w *session.TrajectoryWriter
}

// NewTrajectory writes events to w, one line each, unbuffered.
func NewTrajectory(w io.Writer) *Trajectory {
	return &Trajectory{session.NewTrajectoryWriter(w)}
}

// writer is t's writer; nil (writing nothing) for a nil t.
func (t *Trajectory) writer() *session.TrajectoryWriter {
	if t == nil {
		return nil
	}
	return t.w
}

// Err is the first error writing the trajectory, if any: later events
// were dropped, and the run went on.
func (t *Trajectory) Err() error { return t.writer().Err() }

// Grade writes the grade event of a run over task, whose gold answer is
// gold: the verdict, whether the answer matches the gold, whether it counts
// in accuracy, and the answer's source.
func (t *Trajectory) Grade(task string, gold any, g *Grade) {
	w := t.writer()
	if w == nil || g == nil {
		return
	}
	raw, err := session.MarshalJSON(gold)
	if err != nil {
		raw = nil // a gold that is not JSON is written as null
	}
	w.Grade(session.GradeEvent{Task: task, Verdict: string(g.Verdict), Correct: g.Correct, Accurate: g.Accurate(),
		Source: g.Source, Literal: g.Literal, Reason: g.Reason, Parts: g.Parts, ExtraParts: g.ExtraParts, Gold: raw})
}
