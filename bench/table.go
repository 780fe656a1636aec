package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// InfraCount is how many of the final lines are infra failures: trials
// with a line but no result, which run again on a resume.
func InfraCount(final []Trial) int {
	n := 0
	for _, t := range final {
		if t.Class == ClassInfra {
			n++
		}
	}
	return n
}

// WriteSummary writes the end-of-run table per (model, condition),
// Summarize's rows (the figures the report shows), and where the run is
// (dir); with asJSON the rows as JSON lines instead.
func WriteSummary(w io.Writer, out *Outcome, spec Spec, dir string, asJSON bool) error {
	rows := Summarize(spec, out.Final)
	if asJSON {
		enc := json.NewEncoder(w)
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	many := false
	for _, r := range rows {
		many = many || r.Model != rows[0].Model
	}
	if many {
		fmt.Fprintf(w, "%-20s ", "model")
	}
	// A run with record tasks adds InfiAgent-DABench's scores by part
	// (accuracy is its ABQ).
	records := len(rows) > 0 && rows[0].Records != nil
	fmt.Fprintf(w, "%-9s %9s %9s %6s %7s %15s %14s %8s", "condition", "correct", "accuracy", "infra", "turns", "context tokens", "output tokens", "wall")
	if records {
		fmt.Fprintf(w, " %6s %6s", "PSAQ", "USAQ")
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		if many {
			fmt.Fprintf(w, "%-20s ", r.Model)
		}
		if r.Graded == 0 { // no result (every trial an infra failure, or none ran yet): nothing to average
			fmt.Fprintf(w, "%-9s %9s %9s %6d %7s %15s %14s %8s", r.Condition, "-", "-", r.Infra, "-", "-", "-", "-")
			if records {
				fmt.Fprintf(w, " %6s %6s", "-", "-")
			}
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintf(w, "%-9s %5d/%-3d %8.0f%% %6d %7.2f %15.0f %14.0f %7.1fs", r.Condition, r.Correct, r.Graded, 100*r.Accuracy,
			r.Infra, r.Turns, r.ContextTokens, r.OutputTokens, r.WallMS/1000)
		if records {
			fmt.Fprintf(w, " %5.0f%% %5.0f%%", 100*r.Records.PSAQ, 100*r.Records.USAQ)
		}
		fmt.Fprintln(w)
	}
	for _, r := range rows {
		if r.Unexecuted > 0 {
			fmt.Fprintf(w, "%-8s %d unexecuted answer(s), %d of them right: stated in text, not computed by code, so not counted in accuracy\n",
				r.Condition, r.Unexecuted, r.UnexecutedRight)
		}
		if r.Literal > 0 {
			fmt.Fprintf(w, "%-8s %d literal answer(s), %d of them right: ANSWER of a value typed in the cell; counted in accuracy\n",
				r.Condition, r.Literal, r.LiteralRight)
		}
		if r.KernelDied > 0 {
			fmt.Fprintf(w, "%-8s %d kernel death(s): the model's own code killed its kernel (status kernel_died); graded wrong\n",
				r.Condition, r.KernelDied)
		}
	}
	writeStages(w, rows, out.Final, many)
	for _, r := range rows {
		if r.Estimated {
			fmt.Fprintln(w, "(means per trial; token counts estimated by the tokenizer where the model reported none)")
			break
		}
	}
	var waits []string
	waited := false
	for _, r := range rows {
		if r.Graded > 0 {
			waits = append(waits, fmt.Sprintf("%s %.2fs", r.Condition, r.PoolWaitMS/1000))
			waited = waited || r.PoolWaitMS >= 1
		}
	}
	if waited && !many {
		// The harness's time, not the trials': wall leaves it out.
		fmt.Fprintf(w, "waiting for a pooled kernel, apart from wall (mean per trial): %s\n", strings.Join(waits, ", "))
	}
	// A trial that ended in an infra failure has a line, not a result.
	infra := InfraCount(out.Final)
	results := len(out.Final) - infra
	fmt.Fprintf(w, "%d of %d trials have a result (%d run now, %d from before)", results, out.Total, results-out.Skipped, out.Skipped)
	if infra > 0 {
		fmt.Fprintf(w, "; %d ended in an infrastructure failure, to run again when the run resumes", infra)
	}
	fmt.Fprintf(w, "; the run is in %s\n", dir)
	writeHosts(w, out, spec)
	return nil
}

// writeHosts writes, for a run spread over several hosts (Spec.Hosts), the
// trials each ran now, and each host lost during the run, when and why.
func writeHosts(w io.Writer, out *Outcome, spec Spec) {
	if len(spec.Hosts) == 0 {
		return
	}
	ran := map[string]int{}
	for _, t := range out.Final {
		ran[t.Host]++
	}
	var parts []string
	for _, h := range spec.Hosts {
		parts = append(parts, fmt.Sprintf("%s %d (%d slots)", h.Name, ran[h.Name], h.Slots))
	}
	fmt.Fprintf(w, "hosts, trials of the final lines each ran: %s\n", strings.Join(parts, ", "))
	for _, l := range out.Lost {
		fmt.Fprintf(w, "host %s lost at %s: %s; its trials ran again on the other hosts\n", l.Name, l.At.Format(time.RFC3339), l.Err)
	}
}

// writeStages writes a line per (model, condition) of session trials, in
// the rows' order: their stages right out of those asked.
func writeStages(w io.Writer, rows []Row, final []Trial, many bool) {
	type count struct{ sessions, asked, right int }
	key := func(model, cond string) string {
		if many {
			return model + " " + cond
		}
		return cond
	}
	counts := map[string]*count{}
	for _, t := range final {
		if t.Session == "" || t.Class == ClassInfra {
			continue
		}
		k := key(t.Model, t.Condition)
		c := counts[k]
		if c == nil {
			c = &count{}
			counts[k] = c
		}
		c.sessions++
		c.asked += len(t.Stages)
		for _, st := range t.Stages {
			if st.Correct {
				c.right++
			}
		}
	}
	note := " (a session is correct when every stage is)"
	for _, r := range rows {
		k := key(r.Model, r.Condition)
		if c := counts[k]; c != nil {
			fmt.Fprintf(w, "%-8s %d session(s): %d of the %d stages asked right%s\n", k, c.sessions, c.right, c.asked, note)
			note = ""
		}
	}
}
