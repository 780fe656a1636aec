package session

// The trajectory: a run written as it happens, one JSON object per line,
// so that a crash loses nothing already done (`ctxcode ask --trajectory F`,
// RUNDIR/trajectories/*.jsonl of a bench run). This file is its schema:
// the event types, the one writer (TrajectoryWriter) and the one reader
// (ReadTrajectory). agent writes through the writer; report (its HTML page
// and its notebooks) reads through the reader.
//
// Every line is an object whose first two fields are "type" (the event's
// kind) and "time" (RFC 3339, UTC), then the fields of its event type:
//
//	run        RunEvent: the run's header; a file holds one run or several,
//	           each from its run event to the next
//	prefix     PrefixEvent: the prefix as built, before the first call
//	call       CallEvent: one model call, the message as it came
//	discarded  DiscardedEvent: a call made over cached prefix cells that the
//	           live build did not match, whose reply nobody read
//	cell       CellEvent: one cell (or condition A's tool call) as it ran
//	restart    RestartEvent: the kernel died and was restarted; written
//	           before the event of the cell whose code killed it
//	answer     AnswerEvent: the run's answer
//	end        EndEvent: how the run ended, and its cost
//	grade      GradeEvent: the verdict, written by the caller that knows
//	           the task (bench, ask --task)
//
// Versions. The run event carries "schema", the version of this schema
// (TrajectorySchema); a run event without it is schema 1, which is every
// trajectory written before the field existed. Within a version, fields
// and event kinds are only added, and a reader treats a field that is not
// there as not recorded (older schema-1 files have no prefix "results"
// and no cell "stdout", "stderr", "value" or "error"). The version goes up
// when a field changes its meaning or goes away.
//
// Reading is tolerant where a user would want it, and says what it
// passed over (TrajectoryLog.Skipped): a last line cut short (a run killed
// while writing it: no newline at its end and not JSON) ends the log
// (TrajectoryLog.Torn); a field or an event kind this version does not
// know, and a run of a newer schema, are read as far as they go and noted.
// Anything else that is not an event is an error naming its line
// (*TrajectoryError): a line that is not a JSON object, an object without
// a "type", a known event whose fields do not read, a first event that is
// not a run, an empty file. Such a file was not written by ctxcode whole
// (it was edited, or is another file: run.json, trials.jsonl), and a
// reader that went on past it would show a run that never happened; the
// error comes with the events before the line, for a page that shows what
// it can.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctxcode/ctxcode/kernel"
)

// TrajectorySchema is the version of the trajectory schema this package
// writes, and the newest it reads in full.
const TrajectorySchema = 1

// The kinds of event, the "type" of a trajectory line.
const (
	EventRun       = "run"
	EventPrefix    = "prefix"
	EventCall      = "call"
	EventDiscarded = "discarded"
	EventCell      = "cell"
	EventRestart   = "restart"
	EventAnswer    = "answer"
	EventEnd       = "end"
	EventGrade     = "grade"
)

// RunEvent is a run's header: what was asked, of which model, in which
// condition, over which prefix or skill document, within which budgets.
type RunEvent struct {
	// Schema is the version of the schema the run was written in; 0 on
	// reading means the field was absent: schema 1.
	Schema    int             `json:"schema,omitempty"`
	Model     string          `json:"model"`
	BaseURL   string          `json:"base_url,omitempty"`
	Task      string          `json:"task,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"` // the data set's manifest
	Question  string          `json:"question"`
	Condition string          `json:"condition"`
	Protocol  Protocol        `json:"protocol"`
	Prefix    *PrefixInfo     `json:"prefix,omitempty"`
	Skill     *SkillInfo      `json:"skill,omitempty"`
	Rules     string          `json:"rules_sha256,omitempty"` // a variant's rules, which replaced the condition's
	Budgets   Budgets         `json:"budgets"`
	// Session and Stage place a run in a conversation (ctxcode chat, a
	// staged workload): each question is a run of its own, from 1; the
	// prefix event comes with the first. Context is the context policy
	// (Context.String). All empty for a run of one question.
	Session string `json:"session,omitempty"`
	Stage   int    `json:"stage,omitempty"`
	Context string `json:"context,omitempty"`
}

// PrefixInfo names the prefix a run was built over.
type PrefixInfo struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	SHA256 string `json:"sha256"` // of the cells' code
	Cells  int    `json:"cells"`
}

// SkillInfo identifies condition A's skill document (its text is not
// recorded).
type SkillInfo struct {
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// Budgets are a run's limits.
type Budgets struct {
	MaxTurns        int   `json:"max_turns"`
	MaxPromptTokens int   `json:"max_prompt_tokens"`
	MaxOutputTokens int   `json:"max_output_tokens,omitempty"`
	CellTimeoutMS   int64 `json:"cell_timeout_ms"`
	OutputBudget    int   `json:"output_budget"` // < 0: the whole output read
	MaxRestarts     int   `json:"max_restarts"`  // < 0: none
}

// PrefixEvent is the prefix as built: its cells with the kernel's own
// results, so that a trajectory alone shows the session as the model met
// it, and what became of the cached cells.
type PrefixEvent struct {
	Cells   int    `json:"cells"`
	SetupMS int64  `json:"setup_ms"`
	Cached  string `json:"cached,omitempty"` // how the cached transcript was used (agent.CacheUse)
	Stale   string `json:"stale,omitempty"`  // why the cached cells were not the live ones
	// Results are the built cells; older schema-1 trajectories have none.
	Results []PrefixCell `json:"results"`
}

// PrefixCell is one built cell of the prefix and its result.
type PrefixCell struct {
	Code string `json:"code"`
	kernel.Result
}

// CallEvent is one model call: its cost and the message as it came.
type CallEvent struct {
	Turn          int        `json:"turn"`
	Messages      int        `json:"request_messages"`
	RequestTokens int        `json:"request_tokens_estimate"`
	Usage         Usage      `json:"usage"`
	LatencyMS     int64      `json:"latency_ms"`
	Attempts      int        `json:"attempts,omitempty"`
	WaitedMS      int64      `json:"waited_ms,omitempty"`
	FinishReason  string     `json:"finish_reason,omitempty"`
	Content       string     `json:"content,omitempty"`
	ToolCalls     []ToolCall `json:"tool_calls,omitempty"`
	Error         string     `json:"error,omitempty"`
	// Fold marks the tool-free call of a context policy that folded Folded
	// turns into a summary (its reply, Content); it is not a turn.
	Fold   bool `json:"fold,omitempty"`
	Folded int  `json:"folded_turns,omitempty"`
}

// DiscardedEvent is a call whose reply was discarded unread, and why.
type DiscardedEvent struct {
	CallEvent
	Reason string `json:"reason"`
}

// CellEvent is one cell as it ran: the code, the text the model read of
// its output, and beside it the kernel's own result, uncut but for the
// kernel's output cap (left out when empty; older schema-1 trajectories
// have only Output). Condition A's tool calls are cells with Tool and
// Arguments.
type CellEvent struct {
	Turn         int               `json:"turn"`
	Count        int               `json:"count,omitempty"`
	Tool         string            `json:"tool,omitempty"`      // cli: the tool called
	Arguments    string            `json:"arguments,omitempty"` // cli: its arguments, as they came
	Code         string            `json:"code"`
	Reply        string            `json:"reply,omitempty"` // the model's message, when the code is not all of it
	Notes        []string          `json:"notes,omitempty"` // the harness's notes before the output
	After        []string          `json:"after,omitempty"` // and after it
	RepeatOf     int               `json:"repeat_of,omitempty"`
	Status       kernel.Status     `json:"status,omitempty"`
	ExitCode     *int              `json:"exit_code,omitempty"` // bash: the command's exit status
	Signal       string            `json:"signal,omitempty"`
	TimedOut     bool              `json:"timed_out,omitempty"`
	Output       string            `json:"output"` // what the model read
	DroppedBytes int64             `json:"dropped_bytes,omitempty"`
	ElapsedMS    int64             `json:"elapsed_ms"`
	Answer       json.RawMessage   `json:"answer,omitempty"`
	Stdout       string            `json:"stdout,omitempty"`
	Stderr       string            `json:"stderr,omitempty"`
	Value        string            `json:"value,omitempty"`
	Error        *kernel.ErrorInfo `json:"error,omitempty"`
}

// Recorded says the event holds the kernel's own stdout, stderr, value
// or error beside the text the model read.
func (c *CellEvent) Recorded() bool {
	return c.Stdout != "" || c.Stderr != "" || c.Value != "" || c.Error != nil
}

// Answered says the cell called ANSWER.
func (c *CellEvent) Answered() bool { return len(c.Answer) > 0 && string(c.Answer) != "null" }

// RestartEvent is a kernel restart: the restarts so far, the death that
// caused it, and why the session could not be rebuilt, if it could not.
type RestartEvent struct {
	Restarts int    `json:"restarts"`
	Cause    string `json:"cause"`
	Error    string `json:"error,omitempty"`
}

// AnswerEvent is the run's answer and its source (executed, stated,
// unexecuted).
type AnswerEvent struct {
	Value   string `json:"value"`
	Source  string `json:"source"`
	Literal bool   `json:"literal,omitempty"`
}

// EndEvent is how a run ended and what it cost.
type EndEvent struct {
	Status        string `json:"status"`
	Answer        string `json:"answer,omitempty"`
	AnswerSource  string `json:"answer_source,omitempty"`
	Turns         int    `json:"turns"`
	ContextTokens int    `json:"context_tokens"`
	OutputTokens  int    `json:"output_tokens"`
	CachedTokens  int    `json:"cached_tokens"`
	Estimated     bool   `json:"estimated"`
	Restarts      int    `json:"restarts"`
	Death         string `json:"death,omitempty"`
	WallMS        int64  `json:"wall_ms"`
	SetupMS       int64  `json:"setup_ms"`
	ModelMS       int64  `json:"model_ms"`
	WaitedMS      int64  `json:"waited_ms"`
	Retries       int    `json:"retries"`
	Discarded     int    `json:"discarded_calls,omitempty"`
	Error         string `json:"error,omitempty"`
	// What a context policy did, and what a window must hold: the calls
	// that folded turns into a summary (in the tokens above, not in
	// turns), the cell outputs shown as stubs in the last request, and the
	// largest request in the tokenizer's count. The cell outputs the model
	// read, each once, in tokens and bytes.
	Folds             int `json:"folds,omitempty"`
	Elided            int `json:"elided,omitempty"`
	PeakRequestTokens int `json:"peak_request_tokens,omitempty"`
	ToolResultTokens  int `json:"tool_result_tokens,omitempty"`
	ToolResultBytes   int `json:"tool_result_bytes,omitempty"`
}

// GradeEvent is the grade of a run's answer against its task's gold.
type GradeEvent struct {
	Task     string          `json:"task"`
	Verdict  string          `json:"verdict"`
	Correct  bool            `json:"correct"`  // the answer matches the gold
	Accurate bool            `json:"accurate"` // and counts in accuracy
	Source   string          `json:"source,omitempty"`
	Literal  bool            `json:"literal,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Gold     json.RawMessage `json:"gold"`

	// Parts and ExtraParts are a record answer's: each gold part's verdict
	// (right, wrong, missing) and the parts the gold has not.
	Parts      map[string]string `json:"parts,omitempty"`
	ExtraParts []string          `json:"extra_parts,omitempty"`
}

// eventOf sets, for each kind, the field of an Event that holds it to a
// new event and returns it, for the reader to decode into.
var eventOf = map[string]func(e *Event) any{
	EventRun:       func(e *Event) any { e.Run = new(RunEvent); return e.Run },
	EventPrefix:    func(e *Event) any { e.Prefix = new(PrefixEvent); return e.Prefix },
	EventCall:      func(e *Event) any { e.Call = new(CallEvent); return e.Call },
	EventDiscarded: func(e *Event) any { e.Discarded = new(DiscardedEvent); return e.Discarded },
	EventCell:      func(e *Event) any { e.Cell = new(CellEvent); return e.Cell },
	EventRestart:   func(e *Event) any { e.Restart = new(RestartEvent); return e.Restart },
	EventAnswer:    func(e *Event) any { e.Answer = new(AnswerEvent); return e.Answer },
	EventEnd:       func(e *Event) any { e.End = new(EndEvent); return e.End },
	EventGrade:     func(e *Event) any { e.Grade = new(GradeEvent); return e.Grade },
}

// TrajectoryWriter writes a trajectory, one line per event, unbuffered. A
// nil *TrajectoryWriter writes nothing. The first write error is kept and
// returned by Err; later events are dropped, and the run goes on.
type TrajectoryWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
	now func() time.Time
}

// NewTrajectoryWriter writes events to w.
func NewTrajectoryWriter(w io.Writer) *TrajectoryWriter {
	return &TrajectoryWriter{w: w, now: time.Now}
}

// Run writes a run's header, with the schema's version.
func (t *TrajectoryWriter) Run(e RunEvent) {
	e.Schema = TrajectorySchema
	t.emit(EventRun, e)
}

// Prefix writes the prefix as built.
func (t *TrajectoryWriter) Prefix(e PrefixEvent) { t.emit(EventPrefix, e) }

// Call writes a model call.
func (t *TrajectoryWriter) Call(e CallEvent) { t.emit(EventCall, e) }

// Discarded writes a call whose reply was discarded.
func (t *TrajectoryWriter) Discarded(e DiscardedEvent) { t.emit(EventDiscarded, e) }

// Cell writes a cell.
func (t *TrajectoryWriter) Cell(e CellEvent) { t.emit(EventCell, e) }

// Restart writes a kernel restart.
func (t *TrajectoryWriter) Restart(e RestartEvent) { t.emit(EventRestart, e) }

// Answer writes the run's answer.
func (t *TrajectoryWriter) Answer(e AnswerEvent) { t.emit(EventAnswer, e) }

// End writes how the run ended.
func (t *TrajectoryWriter) End(e EndEvent) { t.emit(EventEnd, e) }

// Grade writes the grade of the run's answer.
func (t *TrajectoryWriter) Grade(e GradeEvent) { t.emit(EventGrade, e) }

// Err is the first error writing the trajectory, if any.
func (t *TrajectoryWriter) Err() error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// emit writes one line: "type" and "time", then the fields of e.
func (t *TrajectoryWriter) emit(kind string, e any) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return
	}
	body, err := MarshalJSON(e)
	if err != nil {
		t.err = fmt.Errorf("trajectory: encode %s event: %w", kind, err)
		return
	}
	var line bytes.Buffer
	line.WriteString(`{"type":`)
	k, _ := json.Marshal(kind)
	line.Write(k)
	line.WriteString(`,"time":"`)
	line.WriteString(t.now().UTC().Format(time.RFC3339Nano))
	line.WriteByte('"')
	if len(body) > 2 {
		line.WriteByte(',')
	}
	line.Write(body[1:])
	line.WriteByte('\n')
	if _, err := t.w.Write(line.Bytes()); err != nil {
		t.err = fmt.Errorf("trajectory: write: %w", err)
	}
}

// MarshalJSON is v as compact JSON without HTML escapes (a trajectory
// keeps "<", ">" and "&" as they are), for a RunEvent's Data or a
// GradeEvent's Gold.
func MarshalJSON(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSpace(b.Bytes()), nil
}

// Event is one line of a trajectory: its kind, time and line number (from
// 1), and its fields in the one field of its kind (Run for a run event,
// and so on).
type Event struct {
	Kind string
	Time string
	Line int

	Run       *RunEvent
	Prefix    *PrefixEvent
	Call      *CallEvent
	Discarded *DiscardedEvent
	Cell      *CellEvent
	Restart   *RestartEvent
	Answer    *AnswerEvent
	End       *EndEvent
	Grade     *GradeEvent
}

// TrajectoryLog is what ReadTrajectory read.
type TrajectoryLog struct {
	Events []Event // in the order written
	// Torn is the line number of a last line cut short (a run killed while
	// writing it), 0 when there is none; what it held is lost.
	Torn int
	// Skipped says, in sentences for people, what was read past: fields
	// and event kinds this version does not know, runs of a newer schema.
	// A reader shows them (see the top of this file).
	Skipped []string
}

// TrajectoryRun is one run of a trajectory, its events by kind.
type TrajectoryRun struct {
	Time   string // the run event's
	Run    RunEvent
	Prefix *PrefixEvent
	Steps  []Event // its call, discarded, cell and restart events, in order
	Answer *AnswerEvent
	End    *EndEvent
	Grade  *GradeEvent
}

// Runs are the runs of l, each from its run event to the next.
func (l *TrajectoryLog) Runs() []*TrajectoryRun {
	var runs []*TrajectoryRun
	for _, e := range l.Events {
		if e.Run != nil {
			runs = append(runs, &TrajectoryRun{Time: e.Time, Run: *e.Run})
			continue
		}
		if len(runs) == 0 {
			continue // ReadTrajectory never returns one: the first event is a run
		}
		r := runs[len(runs)-1]
		switch {
		case e.Prefix != nil:
			r.Prefix = e.Prefix
		case e.Answer != nil:
			r.Answer = e.Answer
		case e.End != nil:
			r.End = e.End
		case e.Grade != nil:
			r.Grade = e.Grade
		default:
			r.Steps = append(r.Steps, e)
		}
	}
	return runs
}

// TrajectoryError is input that is not a trajectory: Line is the line
// (from 1) where that shows, 0 when it is the file as a whole (an empty
// one).
type TrajectoryError struct {
	Line int
	Msg  string
}

func (e *TrajectoryError) Error() string {
	if e.Line == 0 {
		return "not a trajectory: " + e.Msg
	}
	return "line " + strconv.Itoa(e.Line) + ": " + e.Msg
}

// whatTrajectory ends the messages of a file that is not a trajectory.
const whatTrajectory = "a trajectory is the JSON-lines file that `ctxcode ask --trajectory F` and `ctxcode bench` (RUNDIR/trajectories/*.jsonl) write"

// ReadTrajectory reads a trajectory (see the top of this file for what it
// passes over and what is an error). On a *TrajectoryError the log holds
// the events before the line at fault; on another error (reading r) it is
// nil.
func ReadTrajectory(r io.Reader) (*TrajectoryLog, error) {
	l := &TrajectoryLog{}
	sk := &skips{}
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, rerr := br.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, fmt.Errorf("read the trajectory: %w", rerr)
		}
		last := rerr != nil // no newline at its end
		if text := bytes.TrimSpace(line); len(text) > 0 {
			if err := l.read(sk, n, text); err != nil {
				if last && len(l.Events) > 0 && !json.Valid(text) {
					l.Torn = n // cut short by a kill: what came before stands
					break
				}
				l.Skipped = sk.notes()
				return l, err
			}
		}
		if last {
			break
		}
	}
	l.Skipped = sk.notes()
	if len(l.Events) == 0 {
		return l, &TrajectoryError{Msg: "the file is empty; " + whatTrajectory}
	}
	return l, nil
}

// read adds the event on line n.
func (l *TrajectoryLog) read(sk *skips, n int, text []byte) error {
	fail := func(format string, args ...any) error {
		return &TrajectoryError{Line: n, Msg: fmt.Sprintf(format, args...)}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(text, &fields); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fail("not a JSON object; %s", whatTrajectory)
		}
		return fail("not JSON (%v); %s", err, whatTrajectory)
	}
	var kind string
	raw, ok := fields["type"]
	if ok && json.Unmarshal(raw, &kind) != nil {
		return fail("the event's type is not a string; %s", whatTrajectory)
	}
	if kind == "" {
		return fail("a JSON object without a \"type\", so not a trajectory event; %s", whatTrajectory)
	}
	if kind != EventRun && len(l.Events) == 0 {
		return fail("the first event is %q; a trajectory starts with a \"run\" event (%s)", kind, whatTrajectory)
	}
	of, known := eventOf[kind]
	if !known {
		sk.add(fmt.Sprintf("events of kind %q, which this version of ctxcode does not know, were skipped", kind), n)
		return nil
	}
	e := Event{Kind: kind, Line: n}
	if t, ok := fields["time"]; ok {
		_ = json.Unmarshal(t, &e.Time)
	}
	v := of(&e)
	if err := json.Unmarshal(text, v); err != nil {
		return fail("a %s event that does not read: %v", kind, err)
	}
	keys := fieldNames(reflect.TypeOf(v).Elem())
	for _, k := range slices.Sorted(maps.Keys(fields)) { // in order, so that the notes are the same each time
		if k != "type" && k != "time" && !keys[k] {
			sk.add(fmt.Sprintf("the field %q of %s events, which this version of ctxcode does not know, is not shown", k, kind), n)
		}
	}
	if e.Run != nil && e.Run.Schema > TrajectorySchema {
		sk.add(fmt.Sprintf("a run was written in trajectory schema %d, newer than this version of ctxcode reads (%d): "+
			"what it changed may not be shown right; a newer ctxcode reads it", e.Run.Schema, TrajectorySchema), n)
	}
	l.Events = append(l.Events, e)
	return nil
}

var fieldNamesOf sync.Map // reflect.Type -> map[string]bool

// fieldNames are the JSON names of t's fields, those of embedded structs
// included.
func fieldNames(t reflect.Type) map[string]bool {
	if m, ok := fieldNamesOf.Load(t); ok {
		return m.(map[string]bool)
	}
	m := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for k := range fieldNames(f.Type) {
				m[k] = true
			}
		case name != "":
			m[name] = true
		case f.IsExported():
			m[f.Name] = true
		}
	}
	fieldNamesOf.Store(t, m)
	return m
}

// skips gathers what a read passed over, by what, with its lines.
type skips struct {
	order []string
	lines map[string][]int
}

func (s *skips) add(what string, line int) {
	if s.lines == nil {
		s.lines = map[string][]int{}
	}
	if _, ok := s.lines[what]; !ok {
		s.order = append(s.order, what)
	}
	s.lines[what] = append(s.lines[what], line)
}

// notes are the skips as sentences, each with the lines it was on.
func (s *skips) notes() []string {
	var out []string
	for _, what := range s.order {
		out = append(out, fmt.Sprintf("%s (%s)", what, linesText(s.lines[what])))
	}
	return out
}

// linesText names lines: "line 3", "lines 3, 5 and 9", the first few of
// many and how many more.
func linesText(ns []int) string {
	ns = slices.Clone(ns)
	sort.Ints(ns)
	const most = 5
	var s []string
	for i, n := range ns {
		if i == most {
			s = append(s, fmt.Sprintf("%d more", len(ns)-most))
			break
		}
		s = append(s, strconv.Itoa(n))
	}
	if len(s) == 1 {
		return "line " + s[0]
	}
	return "lines " + strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}
