package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Trajectory writes a run as it happens: one JSON object per line, each with
// "type" and "time" first, so a crash loses nothing already done. A nil
// *Trajectory writes nothing. Event types: run, prefix, call, cell,
// restart, answer, end (and grade, written with Grade by the caller that
// knows the task); discarded, a call sent over cached prefix cells that
// the live build did not match, whose reply nobody read (Session.Cached).
// The prefix event comes before the first call event, even when that
// call went out while the prefix was building.
type Trajectory struct {
	mu  sync.Mutex
	w   io.Writer
	err error
	now func() time.Time
}

// NewTrajectory writes events to w, one line each, unbuffered.
func NewTrajectory(w io.Writer) *Trajectory {
	return &Trajectory{w: w, now: time.Now}
}

// Emit writes one event: typ and the JSON object of fields (a struct or a
// map). The first write error is kept and returned by Err; later events are
// dropped, and the run goes on.
func (t *Trajectory) Emit(typ string, fields any) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fields); err != nil {
		t.err = fmt.Errorf("trajectory: encode %s event: %w", typ, err)
		return
	}
	rest := bytes.TrimSpace(body.Bytes())
	if len(rest) < 2 || rest[0] != '{' {
		t.err = fmt.Errorf("trajectory: %s event is not a JSON object", typ)
		return
	}
	var line bytes.Buffer
	line.WriteString(`{"type":`)
	kind, _ := json.Marshal(typ)
	line.Write(kind)
	line.WriteString(`,"time":"`)
	line.WriteString(t.now().UTC().Format(time.RFC3339Nano))
	line.WriteByte('"')
	if len(rest) > 2 {
		line.WriteByte(',')
	}
	line.Write(rest[1:])
	line.WriteByte('\n')
	if _, err := t.w.Write(line.Bytes()); err != nil {
		t.err = fmt.Errorf("trajectory: write: %w", err)
	}
}

// Err is the first error writing the trajectory, if any.
func (t *Trajectory) Err() error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Grade writes the grade event of a run over task, whose gold answer is
// gold: the verdict, whether the answer matches the gold, whether it counts
// in accuracy, and the answer's source.
func (t *Trajectory) Grade(task string, gold any, g *Grade) {
	if g == nil {
		return
	}
	t.Emit("grade", struct {
		Task     string  `json:"task"`
		Verdict  Verdict `json:"verdict"`
		Correct  bool    `json:"correct"`
		Accurate bool    `json:"accurate"`
		Source   string  `json:"source,omitempty"`
		Literal  bool    `json:"literal,omitempty"`
		Reason   string  `json:"reason,omitempty"`
		Gold     any     `json:"gold"`
	}{task, g.Verdict, g.Correct, g.Accurate(), g.Source, g.Literal, g.Reason, gold})
}
