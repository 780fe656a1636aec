package prefixes

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ctxcode/ctxcode/kernel"
)

// SkillDocument is condition A's description of a data folder: a short
// Markdown text with each loadable file, its line count, its fields and its
// last line as a sample record. It replaces the prefix for the CLI agent,
// which reads the files itself. It describes only what the kernel sees as
// data/ (kernel.WalkReadOnly; followLinks as the kernel's copy has it).
// It never describes a task file (its records are questions with their
// golds): bench refuses one the kernels see, and a sample line of it would
// hand the model an answer.
func SkillDocument(dir string, followLinks bool) (string, error) {
	entries, _, err := kernel.ListData(dir, "", followLinks)
	if err != nil {
		return "", fmt.Errorf("read data folder: %w", err)
	}
	var b strings.Builder
	b.WriteString("# The data\n\nThe files are in `data/` (read-only).\n")
	n := 0
	for _, e := range entries {
		name := e.Rel
		format := strings.TrimPrefix(strings.ToLower(filepath.Ext(name)), ".")
		if e.Dir || name == "manifest.json" || (format != "jsonl" && format != "json" && format != "csv") {
			continue
		}
		raw, err := kernel.ReadData(e)
		if err != nil {
			return "", err
		}
		f, err := inspect(raw, format)
		if err != nil || isTaskFile(f.fields) {
			continue
		}
		n++
		lines := bytes.Count(raw, []byte("\n"))
		if len(raw) > 0 && raw[len(raw)-1] != '\n' {
			lines++
		}
		fmt.Fprintf(&b, "\n## data/%s\n\n%d lines", name, lines)
		switch {
		case format == "csv":
			// The header as it stands, so the sample line below reads
			// against it (the fields sorted would not).
			if header, _, _ := bytes.Cut(raw, []byte("\n")); len(header) > 0 {
				fmt.Fprintf(&b, "; the first is the header: %s", strings.TrimPrefix(strings.TrimSpace(string(header)), "\ufeff"))
			}
		case len(f.fields) > 0:
			fmt.Fprintf(&b, "; fields: %s", strings.Join(f.fields, ", "))
		}
		b.WriteString(".\n")
		if last := lastLine(raw); last != "" && format != "json" {
			fmt.Fprintf(&b, "\nLast line:\n\n    %s\n", last)
		}
	}
	if n == 0 {
		return "", fmt.Errorf("no loadable file in %s", dir)
	}
	return b.String(), nil
}

func lastLine(raw []byte) string {
	var last string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			last = s
		}
	}
	if len(last) > 500 {
		last = last[:500] + "…"
	}
	return last
}

// isTaskFile says that records with these fields are tasks of a task file
// (bench.UserTask): a question, its answer type and its gold.
func isTaskFile(fields []string) bool {
	has := func(name string) bool { return slices.Contains(fields, name) }
	return has("question") && has("answer_type") && (has("gold") || has("gold_code"))
}
