package bench

// Staged workloads (DESIGN.md, "Staged workloads"; seed 000's CC(n)): a
// session is several tasks asked one after another in one conversation
// and one kernel, and a trial of it is one line whose Stages keep each
// stage's verdict and use. This file holds the sessions' shape, how
// --stages builds them from the built-in tasks, and how a session trial
// runs.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/ctxcode/ctxcode/agent"
	"github.com/ctxcode/ctxcode/datasets"
	"github.com/ctxcode/ctxcode/llm"
	"github.com/ctxcode/ctxcode/session"
)

// MaxStages bounds --stages: far above a meant run, so that a typo is
// refused at once.
const MaxStages = 100

// Session is a staged workload's session: its tasks, asked one after
// another in one conversation and kernel. A trial of it is keyed by its
// Name (Key.Task), which no task of the run has as its id.
type Session struct {
	Name string `json:"name"`
	// Tasks are the tasks' ids in stage order (stage 1 first).
	Tasks []string `json:"tasks"`
}

// ContextInfo is what run.json pins of a condition's context policy
// (session.Context, with its defaults filled in).
type ContextInfo struct {
	Policy    string  `json:"policy"`
	Window    int     `json:"window"`
	Soft      float64 `json:"soft"`
	Hard      float64 `json:"hard"`
	Recent    float64 `json:"recent"`
	MinRecent int     `json:"min_recent"`
}

// contextInfo is what run.json pins of c: nil for policy none, which has
// no figures (and so pins what a run before context policies pinned).
func contextInfo(c session.Context) *ContextInfo {
	c = c.WithDefaults()
	if c.Policy == session.PolicyNone {
		return nil
	}
	return &ContextInfo{Policy: string(c.Policy), Window: c.Window, Soft: c.Soft, Hard: c.Hard, Recent: c.Recent, MinRecent: c.MinRecent}
}

// policyName is the name Trial.Context records of c: "" for none.
func policyName(c session.Context) string {
	if p := c.WithDefaults().Policy; p != session.PolicyNone {
		return string(p)
	}
	return ""
}

// BuiltinSessions cuts the built-in tasks into sessions of stages
// questions (ctxcode bench --stages): the tasks, shuffled by a generator
// seeded with seed (the data's --seed) and stages, are dealt in runs of
// stages consecutive tasks, as many whole sessions as they make; the tasks
// left over are in none. The sessions are named "<tier>-s<k>-<n>" (stages
// k, the n-th session, from 1), and every task of them is over the one
// data set, so each session asks questions of one data set. The same
// tasks, seed and stages always give the same sessions.
func BuiltinSessions(tasks []datasets.Task, tier string, seed int64, stages int) []Session {
	if stages < 1 || len(tasks) < stages {
		return nil
	}
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	r := rand.New(rand.NewPCG(uint64(seed), uint64(stages)))
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	var out []Session
	for n := 0; (n+1)*stages <= len(ids); n++ {
		out = append(out, Session{Name: fmt.Sprintf("%s-s%d-%d", tier, stages, n+1), Tasks: ids[n*stages : (n+1)*stages]})
	}
	return out
}

// units are the run's trials' tasks in the task list's order: every
// session (at its first stage's place) and every task that is in none.
// stages gives each session's tasks, by name.
func (r *Run) units() (ids []string, stages map[string][]*datasets.Task) {
	byID := make(map[string]*datasets.Task, len(r.Tasks))
	for i := range r.Tasks {
		byID[r.Tasks[i].ID] = &r.Tasks[i]
	}
	first := map[string]*Session{} // by the id of a session's first stage
	staged := map[string]bool{}
	stages = map[string][]*datasets.Task{}
	for i := range r.Sessions {
		s := &r.Sessions[i]
		if len(s.Tasks) == 0 {
			continue
		}
		first[s.Tasks[0]] = s
		for _, id := range s.Tasks {
			staged[id] = true
			if t := byID[id]; t != nil {
				stages[s.Name] = append(stages[s.Name], t)
			}
		}
	}
	for _, t := range r.Tasks {
		switch s := first[t.ID]; {
		case s != nil:
			ids = append(ids, s.Name)
		case !staged[t.ID]:
			ids = append(ids, t.ID)
		}
	}
	return ids, stages
}

// stopsSession says whether a stage that ended with status st ends its
// session: a budget that spans the session ran out or the window was too
// small (the next question would meet it too), the kernel is dead or
// failed, the model's API failed. A wrong answer, no answer, or a stage's
// own turn budget (max_turns, per stage) do not: a user asks the next
// question anyway.
func stopsSession(st agent.Status) bool {
	switch st {
	case agent.MaxPromptTokens, agent.ContextLength, agent.KernelDied, agent.KernelFailed, agent.ModelFailed:
		return true
	}
	return false
}

// runSession asks the stages of w one after another in one conversation
// over sess, grading each as it ends (its grade event follows its run in
// the trajectory), and fills t with every stage's figures and their sums.
// Config.MaxPromptTokens is the session's budget: each stage gets what the
// stages before it left. The error is ctx's, or a session that does not
// fit the protocol (for the caller to make a FatalError); the result is
// the last stage's, for fatal().
func (r *Run) runSession(ctx context.Context, w work, sess *agent.Session, cfg agent.Config, info agent.Info, model llm.Model, traj *agent.Trajectory, t *Trial) (*agent.Result, error) {
	info.Session, info.Task, info.Question = w.key.Task, "", ""
	conv, err := agent.NewConversation(sess, model, cfg, info, traj, nil)
	if err != nil {
		return nil, err
	}
	budget := cfg.MaxPromptTokens
	if budget <= 0 {
		budget = agent.DefaultConfig().MaxPromptTokens
	}
	var (
		cum     StageUse
		sum     Trial // the stages' figures, summed
		last    *agent.Result
		failing = -1 // the first stage that is not right
		reason  string
		right   = true // every stage's answer matched its gold
	)
	for i, task := range w.stages {
		conv.SetMaxPromptTokens(budget - cum.InputTokens)
		res, err := conv.Ask(ctx, task.Question, task.ID)
		if err != nil {
			return res, err
		}
		g := grade(task, res, traj)
		last = res
		u := res.Usage
		own := StageUse{Calls: res.Turns + res.Folds, InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
			ToolResultTokens: res.ToolResultTokens, ToolResultBytes: res.ToolResultBytes}
		cum.Add(own)
		t.Stages = append(t.Stages, StageFigures{Stage: i + 1, Task: task.ID, Status: res.Status, Answer: answerJSON(res),
			Verdict: string(g.Verdict), Correct: g.Accurate(), Own: own, Cumulative: cum,
			PeakRequestTokens: res.PeakRequestTokens, Elided: res.Elided})
		right = right && g.Correct
		if failing < 0 && !g.Accurate() {
			failing, reason = i, fmt.Sprintf("stage %d (%s): %s", i+1, task.ID, g.Reason)
		}
		if i == 0 {
			sum.KernelMS = res.Setup.Milliseconds()
		}
		sum.Turns += res.Turns
		sum.Folds += res.Folds
		sum.ContextTokens += u.PromptTokens
		sum.OutputTokens += u.CompletionTokens
		sum.CachedTokens += u.CachedTokens
		sum.ReasoningTokens += u.ReasoningTokens
		sum.Estimated = sum.Estimated || u.Estimated
		sum.WallMS += res.Wall.Milliseconds()
		sum.ModelMS += res.Model.Milliseconds()
		sum.WaitedMS += res.Waited.Milliseconds()
		sum.Retries += res.Retries
		sum.Restarts += res.Restarts
		if stopsSession(res.Status) {
			break
		}
	}
	// The session's outcome: the stage that ended it gives the class, the
	// error and the answer (an infra failure runs the whole session
	// again); the first stage that went wrong, else the last, the status
	// and verdict. A session cut short is not right, whatever its stages.
	fill(t, last)
	whole := len(t.Stages) == len(w.stages)
	t.Session, t.Context = w.key.Task, policyName(cfg.Context)
	t.Correct, t.AnswerRight = failing < 0 && whole, right && whole
	t.GradeReason, t.Parts, t.ExtraParts = reason, nil, nil
	if failing >= 0 {
		t.Status, t.Verdict = t.Stages[failing].Status, t.Stages[failing].Verdict
	}
	t.Turns, t.Folds, t.ContextTokens, t.OutputTokens, t.CachedTokens, t.ReasoningTokens, t.Estimated =
		sum.Turns, sum.Folds, sum.ContextTokens, sum.OutputTokens, sum.CachedTokens, sum.ReasoningTokens, sum.Estimated
	t.WallMS, t.KernelMS, t.ModelMS, t.WaitedMS, t.Retries, t.Restarts =
		sum.WallMS, sum.KernelMS, sum.ModelMS, sum.WaitedMS, sum.Retries, sum.Restarts
	return last, nil
}

// sameJSON says whether a and b marshal alike.
func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// contextText is a pinned context policy in a few words.
func contextText(c *ContextInfo) string {
	if c == nil {
		return "none"
	}
	return session.Context{Policy: session.Policy(c.Policy), Window: c.Window, Soft: c.Soft, Hard: c.Hard, Recent: c.Recent, MinRecent: c.MinRecent}.String() +
		fmt.Sprintf(" (recent %g, at least %d turns)", c.Recent, c.MinRecent)
}

// builtinSessions cuts the built-in tasks into sessions of Config.Stages
// questions, and keeps only the tasks that are in one.
func (s *Setup) builtinSessions() error {
	n := s.cfg.Stages
	sessions := BuiltinSessions(s.Tasks, s.Source.Tier, s.Source.Seed, n)
	if len(sessions) == 0 {
		return inputErrorf("--stages %d: the data has %d built-in tasks, too few for one session of %d questions: give fewer stages", n, len(s.Tasks), n)
	}
	s.Run.Sessions = sessions
	s.Source.Stages = n
	s.keepSessionTasks()
	return nil
}

// keepSessionTasks keeps of the built-in tasks those of Run.Sessions, in
// the sessions' order.
func (s *Setup) keepSessionTasks() {
	byID := map[string]datasets.Task{}
	for _, t := range s.Tasks {
		byID[t.ID] = t
	}
	var kept []datasets.Task
	for _, ss := range s.Run.Sessions {
		for _, id := range ss.Tasks {
			kept = append(kept, byID[id])
		}
	}
	s.Tasks = kept
}

// onlySessions keeps the built-in sessions (--stages) named in want.
func (s *Setup) onlySessions(want map[string]bool) error {
	var kept []Session
	for _, ss := range s.Run.Sessions {
		if want[ss.Name] {
			kept = append(kept, ss)
			delete(want, ss.Name)
		}
	}
	if len(want) > 0 {
		var missing []string
		for id := range want {
			missing = append(missing, id)
		}
		slices.Sort(missing)
		all := s.Run.Sessions
		return inputErrorf("--task: no session %s: with --stages, --task names sessions (%s … %s)", strings.Join(missing, ", "), all[0].Name, all[len(all)-1].Name)
	}
	s.Run.Sessions = kept
	s.keepSessionTasks()
	return nil
}

// Units is the run's task list as its trials are keyed. A session trial's
// key names its session, so each session is listed once, where its first
// stage was, as a unit whose question lists its stages' questions and whose
// gold is theirs in order; the tasks in no session stay as they are. The
// report reads this list, so that its per-task figures and pairings are
// per session in a staged run.
func (s Spec) Units() []datasets.Task {
	if len(s.Sessions) == 0 {
		return s.TaskList
	}
	at := map[string]int{}
	for i, t := range s.TaskList {
		at[t.ID] = i
	}
	first, staged := map[string]int{}, map[string]bool{}
	for i, se := range s.Sessions {
		for _, id := range se.Tasks {
			staged[id] = true
		}
		if len(se.Tasks) > 0 {
			first[se.Tasks[0]] = i
		}
	}
	var out []datasets.Task
	for _, t := range s.TaskList {
		i, ok := first[t.ID]
		if !ok {
			if !staged[t.ID] {
				out = append(out, t)
			}
			continue
		}
		se := s.Sessions[i]
		u := datasets.Task{ID: se.Name, Template: "session"}
		var qs []string
		var golds []any
		for k, id := range se.Tasks {
			if j, ok := at[id]; ok {
				qs = append(qs, fmt.Sprintf("(%d) %s", k+1, s.TaskList[j].Question))
				golds = append(golds, s.TaskList[j].Gold)
			}
		}
		u.Question, u.Gold = strings.Join(qs, " "), golds
		out = append(out, u)
	}
	return out
}
