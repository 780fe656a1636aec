package bench

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ctxcode/ctxcode/datasets"
)

// The parts of a task file that records (answer_type record) and meta add.

const recordGoldExample = `{"mean": 3.25, "kind": "normal"}`

// fitRecordGold checks a record gold: a non-empty object whose parts are
// numbers, non-empty strings and booleans.
func fitRecordGold(v any) (any, string) {
	m, ok := v.(map[string]any)
	if !ok {
		hint := ""
		if s, ok := v.(string); ok && strings.HasPrefix(strings.TrimSpace(s), "{") {
			hint = " (the kernel could not write the dict as JSON: convert numpy values with float() or int())"
		}
		return nil, fmt.Sprintf("%s, which does not fit answer_type record: expected an object of named parts, such as %s%s",
			describeGoldValue(v), recordGoldExample, hint)
	}
	if len(m) == 0 {
		return nil, "an empty object, which has no part to grade: give at least one part, such as " + recordGoldExample
	}
	out := make(map[string]any, len(m))
	for _, name := range sortedKeys(m) {
		x := m[name]
		if strings.TrimSpace(name) == "" {
			return nil, "an object with an empty part name: give each part a name, such as " + recordGoldExample
		}
		switch x := x.(type) {
		case float64, bool:
		case string:
			if strings.TrimSpace(x) == "" {
				return nil, fmt.Sprintf("an object whose part %q is an empty string, which no answer can match: give the text the part must be", name)
			}
		case nil:
			return nil, fmt.Sprintf("an object whose part %q is null: give its value, or leave the part out", name)
		default:
			return nil, fmt.Sprintf("an object whose part %q is %s, but a record's parts must be numbers, strings or booleans: give each value a part of its own, such as %q and %q",
				name, describeGoldValue(x), name+"_1", name+"_2")
		}
		out[name] = x
	}
	return out, ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func isJSONObject(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return strings.HasPrefix(s, "{")
}

func toleranceOutOfRange(f float64) string {
	if f > 0 && f < 1 {
		return ""
	}
	return fmt.Sprintf("tolerance %v is out of range: give a relative tolerance above 0 and below 1, such as 0.001 for 0.1%%", f)
}

func decimalsOutOfRange(n int) string {
	if n >= 1 && n <= maxDecimals {
		return ""
	}
	return fmt.Sprintf("decimals %d is out of range: give how many decimals the question asks for, 1 to %d", n, maxDecimals)
}

// parsePartTolerance reads a record's tolerance by part into t.
func parsePartTolerance(t *UserTask, raw json.RawMessage) []string {
	var m map[string]float64
	if err := json.Unmarshal(raw, &m); err != nil {
		return []string{`tolerance is an object whose values are not all numbers: give each numeric part's relative tolerance, such as {"mean": 0.01}`}
	}
	var msgs []string
	for _, name := range sortedKeys(m) {
		if why := toleranceOutOfRange(m[name]); why != "" {
			msgs = append(msgs, fmt.Sprintf("part %q: %s", name, why))
		}
	}
	if len(msgs) == 0 {
		t.PartTolerance = m
		msgs = append(msgs, partsFitGold(*t, t.Gold))
	}
	return nonEmpty(msgs)
}

// parsePartDecimals reads a record's decimals by part into t.
func parsePartDecimals(t *UserTask, raw json.RawMessage) []string {
	var m map[string]int
	if err := json.Unmarshal(raw, &m); err != nil {
		return []string{`decimals is an object whose values are not all whole numbers: give how many decimals each numeric part asks for, such as {"mean": 2, "p_value": 4}`}
	}
	var msgs []string
	for _, name := range sortedKeys(m) {
		if why := decimalsOutOfRange(m[name]); why != "" {
			msgs = append(msgs, fmt.Sprintf("part %q: %s", name, why))
		}
	}
	if len(msgs) == 0 {
		t.PartDecimals = m
		msgs = append(msgs, partsFitGold(*t, t.Gold))
	}
	return nonEmpty(msgs)
}

func nonEmpty(msgs []string) []string {
	out := msgs[:0]
	for _, m := range msgs {
		if m != "" {
			out = append(out, m)
		}
	}
	return out
}

// partsFitGold says what is wrong with t's tolerance and decimals by part
// for gold, a record gold (anything else, such as the nil gold of a task
// with gold_code not yet run, passes): each part they name must be a
// numeric part of the gold.
func partsFitGold(t UserTask, gold any) string {
	g, ok := gold.(map[string]any)
	if !ok {
		return ""
	}
	var msgs []string
	check := func(field string, names []string) {
		for _, name := range names {
			v, ok := g[name]
			switch {
			case !ok:
				msgs = append(msgs, fmt.Sprintf("%s names part %q, which the gold does not have (its parts: %s)", field, name, strings.Join(quoteAll(sortedKeys(g)), ", ")))
			case !isGoldNumber(v):
				msgs = append(msgs, fmt.Sprintf("%s names part %q, which is %s: %s is for numeric parts", field, name, describeGoldValue(v), field))
			}
		}
	}
	check("tolerance", sortedKeys(t.PartTolerance))
	check("decimals", sortedKeys(t.PartDecimals))
	return strings.Join(msgs, "; ")
}

func isGoldNumber(v any) bool {
	_, ok := v.(float64)
	return ok
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Quote(x)
	}
	return out
}

// parseMeta reads a task's meta, an object of anything, into t.
func parseMeta(t *UserTask, raw json.RawMessage) []string {
	if raw == nil || string(raw) == "null" {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return []string{fmt.Sprintf(`meta is %s, not an object: give free metadata as an object, such as {"level": "hard", "concepts": ["Summary Statistics"]}`, jsonKindOf(raw))}
	}
	if len(m) > 0 {
		t.Meta = m
	}
	return nil
}

// MarshalJSON writes t as a line of a task file: tolerance and decimals
// are objects by part when t has PartTolerance or PartDecimals.
func (t UserTask) MarshalJSON() ([]byte, error) {
	type plain UserTask // without this method
	var (
		line = struct {
			plain
			Tolerance json.RawMessage `json:"tolerance,omitempty"`
			Decimals  json.RawMessage `json:"decimals,omitempty"`
		}{plain: plain(t)}
		err error
	)
	if line.Tolerance, err = datasets.ByPartJSON(t.Gold, t.Tolerance, t.PartTolerance); err != nil {
		return nil, err
	}
	if line.Decimals, err = datasets.ByPartJSON(t.Gold, t.Decimals, t.PartDecimals); err != nil {
		return nil, err
	}
	return json.Marshal(line)
}

// byPartHint adds, for a record, that tolerance and decimals may be
// objects by part.
func byPartHint(typ datasets.AnswerType, example string) string {
	if typ != datasets.Record {
		return ""
	}
	return ", or an object by part, such as " + example
}
