package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/session"
)

// TestTrajectoryRoundTrip: every kind of event, written with every field
// set, reads back as it was written, with nothing skipped; each line
// starts with "type" and "time", and the run carries the schema.
func TestTrajectoryRoundTrip(t *testing.T) {
	exit := 3
	call := session.CallEvent{Turn: 1, Messages: 4, RequestTokens: 900, Usage: session.Usage{PromptTokens: 910, CompletionTokens: 20,
		CachedTokens: 512, ReasoningTokens: 4, Estimated: true}, LatencyMS: 40, Attempts: 2, WaitedMS: 7, FinishReason: "tool_calls",
		Content: "<b>& words", ToolCalls: []session.ToolCall{{ID: "c1", Name: "bash", Arguments: `{"command":"ls"}`}}, Error: "e"}
	want := []session.Event{
		{Kind: session.EventRun, Run: &session.RunEvent{Schema: session.TrajectorySchema, Model: "m", BaseURL: "http://x", Task: "t",
			Data: json.RawMessage(`{"tier":"s","seed":1}`), Question: "Q <&>?", Condition: "D-v3", Protocol: session.Bare,
			Prefix: &session.PrefixInfo{Name: "pm", Source: "builtin:pm.py", SHA256: "ab", Cells: 1}, Skill: &session.SkillInfo{SHA256: "cd", Bytes: 9},
			Rules: "ef", Budgets: session.Budgets{MaxTurns: 12, MaxPromptTokens: 1000, MaxOutputTokens: 99, CellTimeoutMS: 30000, OutputBudget: -1, MaxRestarts: 3}}},
		{Kind: session.EventPrefix, Prefix: &session.PrefixEvent{Cells: 1, SetupMS: 5, Cached: "stale", Stale: "why",
			Results: []session.PrefixCell{{Code: "x = 1", Result: kernel.Result{Count: 1, Status: kernel.StatusOK, Value: "1", ElapsedMS: 2, Answer: json.RawMessage(`null`)}}}}},
		{Kind: session.EventCall, Call: &call},
		{Kind: session.EventDiscarded, Discarded: &session.DiscardedEvent{CallEvent: call, Reason: "stale"}},
		{Kind: session.EventRestart, Restart: &session.RestartEvent{Restarts: 1, Cause: "died", Error: "no"}},
		{Kind: session.EventCell, Cell: &session.CellEvent{Turn: 1, Count: 2, Tool: "bash", Arguments: "{}", Code: "ls", Reply: "r",
			Notes: []string{"n"}, After: []string{"a"}, RepeatOf: 1, Status: kernel.StatusError, ExitCode: &exit, Signal: "SIGKILL",
			TimedOut: true, Output: "o", DroppedBytes: 8, ElapsedMS: 9, Answer: json.RawMessage(`7`), Stdout: "so", Stderr: "se",
			Value: "v", Error: &kernel.ErrorInfo{Name: "E", Value: "v", Traceback: "tb"}}},
		{Kind: session.EventAnswer, Answer: &session.AnswerEvent{Value: "7", Source: "executed", Literal: true}},
		{Kind: session.EventEnd, End: &session.EndEvent{Status: "answered", Answer: "7", AnswerSource: "executed", Turns: 1,
			ContextTokens: 910, OutputTokens: 20, CachedTokens: 512, Estimated: true, Restarts: 1, Death: "oom", WallMS: 100,
			SetupMS: 5, ModelMS: 40, WaitedMS: 7, Retries: 1, Discarded: 1, Error: "e"}},
		{Kind: session.EventGrade, Grade: &session.GradeEvent{Task: "t", Verdict: "correct", Correct: true, Accurate: true,
			Source: "executed", Literal: true, Reason: "r", Gold: json.RawMessage(`{"a":"<b>"}`)}},
	}
	var buf bytes.Buffer
	w := session.NewTrajectoryWriter(&buf)
	for _, e := range want {
		switch {
		case e.Run != nil:
			r := *e.Run
			r.Schema = 0 // the writer sets it
			w.Run(r)
		case e.Prefix != nil:
			w.Prefix(*e.Prefix)
		case e.Call != nil:
			w.Call(*e.Call)
		case e.Discarded != nil:
			w.Discarded(*e.Discarded)
		case e.Restart != nil:
			w.Restart(*e.Restart)
		case e.Cell != nil:
			w.Cell(*e.Cell)
		case e.Answer != nil:
			w.Answer(*e.Answer)
		case e.End != nil:
			w.End(*e.End)
		case e.Grade != nil:
			w.Grade(*e.Grade)
		}
	}
	require.NoError(t, w.Err())
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, len(want))
	for i, l := range lines {
		assert.True(t, strings.HasPrefix(l, `{"type":"`+want[i].Kind+`","time":"`), l)
	}
	assert.Contains(t, lines[0], `"schema":1,`)
	assert.Contains(t, lines[0], `"Q <&>?"`, "no HTML escapes")

	l, err := session.ReadTrajectory(&buf)
	require.NoError(t, err)
	assert.Empty(t, l.Skipped)
	assert.Zero(t, l.Torn)
	require.Len(t, l.Events, len(want))
	for i := range want {
		want[i].Line = i + 1
		assert.NotEmpty(t, l.Events[i].Time)
		l.Events[i].Time = ""
	}
	assert.Equal(t, want, l.Events)

	runs := l.Runs()
	require.Len(t, runs, 1)
	assert.Equal(t, "m", runs[0].Run.Model)
	assert.NotNil(t, runs[0].Prefix)
	assert.Len(t, runs[0].Steps, 4, "call, discarded, restart, cell")
	assert.NotNil(t, runs[0].Answer)
	assert.NotNil(t, runs[0].End)
	assert.NotNil(t, runs[0].Grade)
}

// TestReadTrajectory: what the reader passes over (noted), and what is an
// error naming its line (with the events before it).
func TestReadTrajectory(t *testing.T) {
	run := `{"type":"run","time":"2026-01-01T00:00:00Z","model":"m","question":"Q?","condition":"D","protocol":"bare"}` + "\n"
	call := `{"type":"call","time":"2026-01-01T00:00:01Z","turn":1,"content":"1 + 1"}` + "\n"
	for _, tc := range []struct {
		name, input string
		events      int
		torn        int
		skipped     []string
	}{
		{"schema 1 without the field", run + call, 2, 0, nil},
		{"a torn last line", run + call + `{"type":"cell","turn":1,"co`, 2, 3, nil},
		{"a torn last line that is JSON is an event", run + `{"type":"end","status":"answered"}`, 2, 0, nil},
		{"unknown fields", run + strings.Replace(call, `"turn"`, `"mood":1,"turn"`, 1) + strings.Replace(call, `"turn"`, `"mood":2,"turn"`, 1), 3, 0,
			[]string{`the field "mood" of call events, which this version of ctxcode does not know, is not shown (lines 2 and 3)`}},
		{"unknown fields in the order of their names", run + strings.Replace(call, `"turn"`, `"zeta":1,"alpha":2,"turn"`, 1), 2, 0,
			[]string{`the field "alpha" of call events, which this version of ctxcode does not know, is not shown (line 2)`,
				`the field "zeta" of call events, which this version of ctxcode does not know, is not shown (line 2)`}},
		{"an unknown event kind", run + `{"type":"thought","text":"hm"}` + "\n" + call, 2, 0,
			[]string{`events of kind "thought", which this version of ctxcode does not know, were skipped (line 2)`}},
		{"a newer schema", strings.Replace(run, `"model"`, `"schema":2,"model"`, 1) + call, 2, 0,
			[]string{`a run was written in trajectory schema 2, newer than this version of ctxcode reads (1): what it changed may not be shown right; a newer ctxcode reads it (line 1)`}},
		{"blank lines", "\n" + run + "\n\n" + call, 2, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := session.ReadTrajectory(strings.NewReader(tc.input))
			require.NoError(t, err)
			assert.Len(t, l.Events, tc.events)
			assert.Equal(t, tc.torn, l.Torn)
			assert.Equal(t, tc.skipped, l.Skipped)
		})
	}

	for _, tc := range []struct {
		name, input string
		line        int
		before      int // events read before the line
		want        string
	}{
		{"empty", "", 0, 0, "not a trajectory: the file is empty"},
		{"a trials.jsonl line", `{"model":"reference","condition":"A"}` + "\n", 1, 0, `line 1: a JSON object without a "type", so not a trajectory event`},
		{"run.json", "{\n  \"format\": 1\n}\n", 1, 0, "line 1: not JSON ("},
		{"not an object", "[1, 2]\n", 1, 0, "line 1: not a JSON object"},
		{"type not a string", `{"type": 7}` + "\n", 1, 0, "line 1: the event's type is not a string"},
		{"no run first", `{"type":"cell","turn":1}` + "\n", 1, 0, `line 1: the first event is "cell"; a trajectory starts with a "run" event`},
		{"a field that does not read", run + `{"type":"call","turn":"one"}` + "\n", 2, 1, "line 2: a call event that does not read: "},
		{"garbage in the middle", run + call + "garbage\n" + call, 3, 2, "line 3: not JSON ("},
		{"a torn line alone", `{"type":"run","mo`, 1, 0, "line 1: not JSON ("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := session.ReadTrajectory(strings.NewReader(tc.input))
			var te *session.TrajectoryError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, tc.line, te.Line)
			assert.Contains(t, err.Error(), tc.want)
			require.NotNil(t, l)
			assert.Len(t, l.Events, tc.before)
		})
	}

	t.Run("a read error", func(t *testing.T) {
		l, err := session.ReadTrajectory(errReader{})
		assert.Nil(t, l)
		assert.ErrorContains(t, err, "read the trajectory: disk")
	})
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk") }

// TestReadTrajectorySchema1: the trajectories written before the schema
// had its home here read whole, with nothing skipped: those of today's
// format (testdata/trajectories/schema1) and older ones, without prefix
// results or kernel results (the report's fixture run).
func TestReadTrajectorySchema1(t *testing.T) {
	var files []string
	for _, dir := range []string{"../testdata/trajectories/schema1", "../testdata/report/run/trajectories"} {
		f, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		require.NoError(t, err)
		require.NotEmpty(t, f, dir)
		files = append(files, f...)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		l, err := session.ReadTrajectory(bytes.NewReader(b))
		require.NoError(t, err, f)
		assert.Empty(t, l.Skipped, f)
		assert.Zero(t, l.Torn, f)
		runs := l.Runs()
		require.Len(t, runs, 1, f)
		assert.Zero(t, runs[0].Run.Schema, "%s: written before the field", f)
		assert.NotNil(t, runs[0].End, f)
		assert.NotNil(t, runs[0].Grade, f)
	}
}
