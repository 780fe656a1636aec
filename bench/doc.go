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
// again; a line cut short by a crash is dropped when the run is opened
// again (its trial runs again).
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
// # Kernels
//
// Trials take their kernels from one sandbox.WarmPool per prefix (the image
// and the data are the run's): each kernel there is started and has its
// prefix executed before a trial asks for it, so a trial starts at its first
// model request. A kernel serves one trial and is closed after it. A pool is
// opened shortly before its first trial is due and closed once its last
// trial has its kernel; every pool is closed when the run ends, however it
// ends.
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
