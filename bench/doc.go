// Package bench runs the cost ladder as an experiment: every (model,
// condition, task, rep) is one trial, run in a fresh kernel whose prefix is
// already built, several at a time, logged so that a run survives kill -9
// and resumes without repeating a finished trial.
//
// # The run directory
//
//	RUNDIR/run.json         the run's Spec, written before the first trial
//	RUNDIR/trials.jsonl     one Trial per line, written, flushed and fsync'd as each trial ends
//	RUNDIR/trajectories/    one JSON-lines trajectory per trial (as ask --trajectory)
//
// The log is append-only. A trial's trajectory is written to a temporary
// file and renamed into place before its line is appended, so every line
// names a complete trajectory. A trajectory that could not be written
// whole (a full disk) is never renamed into place: its trial's line has
// status NotRecorded, class ClassInfra and no trajectory, and the run stops
// (a FatalError). A line that could not be appended whole is cut off
// again, and the run stops (the log ends with its last whole line); a line
// cut short by a crash is dropped when the run is opened again (its trial
// runs again). Each rename is followed by an fsync of the trajectories'
// folder, and a new trials.jsonl by one of the run folder.
//
// # What a run pins
//
// The Spec holds everything that decides a trial's result: the models and
// their sampling, each condition's prefix and the hash of its first request
// as the agent renders it (Run.FirstRequestSHA256), the tasks with their
// golds, the data, reps, budgets, the parallelism, the sandbox's limits and
// network, the kernel driver and the image or interpreter (RuntimeInfo),
// and the ctxcode version. A run resumes only under the same Spec and
// version (Diff names the differences); a run.json of format 1, which
// pinned less, is read (ReadDir) but not resumed.
//
// # Error classes
//
// Every trial line has a class that keeps the denominator honest, by
// cause: ClassModel (the model answered, answered wrong, gave no answer, ran
// out of budget, or its own code killed the kernel, status kernel_died with
// its Death: an exit, out of memory, a cell past the hard deadline — its
// result, wrong in accuracy) or ClassInfra (a kernel that would not start,
// attach or restart, the sandbox, or the model's API after its retries: not
// the model's result). Resuming runs every key
// without a line, and every key whose last line is ClassInfra; the rest is
// never run again. A trial still running when the run stops (Ctrl-C, kill)
// has no line, so it runs again.
//
// # Conditions
//
// The ladder is agent.Ladder, one table (protocol, prefix role, loop or one
// shot, rules); a run's Condition is a rung of it with its prefix, or a
// Variant of one read from a conditions file (ReadConditions): a built-in
// condition under another name, with a rules text that replaces the base's
// or a prefix of its own. run.json records each with its base and its
// rules' hash.
//
// # Building a run
//
// A Config is a run as plain values (ctxcode bench's flags). Prepare finds
// its data (the built-in data in the cache folder, or a folder), its tasks
// (built-in, or a task file's), the prefix each condition starts from
// (LadderPrefixes) and its models, and refuses bad input as an *InputError
// before any kernel starts; Setup.Open checks the run folder, opens the
// sandbox, computes the golds of gold_code, pins the Spec and opens the
// Log. WriteSummary prints the end-of-run table.
//
// # Staged workloads
//
// A Session groups tasks into stages asked one after another in one
// conversation and kernel (agent.Conversation): a task file's "session"
// and "stage" (checked by ReadTasks: stages 1 to n, one data folder), or
// BuiltinSessions for --stages (the built-in tasks shuffled by the data's
// seed and the stage count, cut into runs of that many). Spec.Sessions
// pins them. A trial of a session is keyed by its name (Key.Task) and
// written to one trajectory: a run per stage, each followed by its grade.
// Its line's Stages keep each stage's status, answer, verdict, its own
// use and the session's cumulative use (StageUse: calls, input, output
// and tool-result tokens); the trial's totals are their sums, and it is
// correct when every stage is and none was left unasked. A session goes
// on after a wrong or missing answer and after a stage's own max_turns
// (MaxTurns is per stage); it stops after a stage that ran out of the
// prompt-token budget or the model's window, whose kernel died or failed,
// or whose API call failed (stopsSession); the trial's status is the first
// stage's that was not right, else the last's, and its class the last
// stage's, so an infra failure runs the whole session again on resume.
// Budgets.MaxPromptTokens spans the session: each stage is given what the
// stages before it left (agent.Conversation.SetMaxPromptTokens), so a
// session is cut by its budget as CC(n) counts it (censored).
//
// A condition's context policy (Condition.Context, session.Context) is an
// attribute of the condition: the run's (--context, --window, ...) or a
// variant's own, pinned in run.json (ConditionInfo.Context) and named in
// each trial line (Trial.Context); it applies to every trial, of one
// question or of a session.
//
// # Order
//
// Trials run interleaved (Order): rep by rep, each task in every (model,
// condition), in an order drawn anew for each task, before the next task,
// from Spec.OrderSeed, which run.json keeps, so a resume runs the trials
// left in the order they would have run. What changes with time (the API's
// latency, throttling, a provider's cache) falls on every condition alike.
//
// # Kernels
//
// Trials take their kernels from one sandbox.WarmPool per prefix (the image
// and the data are the run's): each kernel there is started and has its
// prefix executed before a trial asks for it, so a trial starts at its first
// model request. A kernel serves one trial and is closed after it. In the
// interleaved order every pool is drawn on all the time: the pools stay
// open side by side, each sized by its share of the trials (poolSize), and
// a pool is closed once its last trial has its kernel, never before; every
// pool is closed when the run ends, however it ends. The time a trial waits
// for its kernel is its line's PoolWaitMS, apart from its WallMS.
//
// # Throttling
//
// The models of a run that talk to the same endpoint share one
// llm.Throttle (the caller gives it to the clients): a 429 from the
// provider slows every worker, not only the one that got it.
//
// Non-goals: statistics beyond the summary's means (package report owns
// them), money (computed from prices in the report), scheduling across
// machines.
package bench
