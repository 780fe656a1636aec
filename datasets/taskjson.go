package datasets

import (
	"encoding/json"
	"fmt"
)

// taskJSON is Task as JSON: tolerance and decimals are a number for the
// whole task or an object by part (PartTolerance, PartDecimals).
type taskJSON struct {
	ID         string          `json:"id"`
	Template   string          `json:"template"`
	Question   string          `json:"question"`
	Params     map[string]any  `json:"params"`
	AnswerType AnswerType      `json:"answer_type"`
	Gold       any             `json:"gold"`
	Accept     []any           `json:"accept,omitempty"`
	Tolerance  json.RawMessage `json:"tolerance,omitempty"`
	Decimals   json.RawMessage `json:"decimals,omitempty"`
	Meta       map[string]any  `json:"meta,omitempty"`
}

// MarshalJSON writes t with "tolerance" and "decimals" as numbers, or as
// objects by part when t has PartTolerance or PartDecimals: then a numeric
// part of the gold the object would not name gets the task's own value, so
// that nothing is lost.
func (t Task) MarshalJSON() ([]byte, error) {
	j := taskJSON{ID: t.ID, Template: t.Template, Question: t.Question, Params: t.Params, AnswerType: t.AnswerType,
		Gold: t.Gold, Accept: t.Accept, Meta: t.Meta}
	var err error
	if j.Tolerance, err = ByPartJSON(t.Gold, t.Tolerance, t.PartTolerance); err != nil {
		return nil, err
	}
	if j.Decimals, err = ByPartJSON(t.Gold, t.Decimals, t.PartDecimals); err != nil {
		return nil, err
	}
	return json.Marshal(j)
}

// ByPartJSON is the JSON of a task's tolerance or decimals: the whole-task
// value (nil when zero) or, with parts, the object of the parts completed
// by the whole-task value for the gold's other numeric parts.
func ByPartJSON[V int | float64](gold any, whole V, parts map[string]V) (json.RawMessage, error) {
	if len(parts) == 0 {
		if whole == 0 {
			return nil, nil
		}
		return json.Marshal(whole)
	}
	all := make(map[string]V, len(parts))
	if g, ok := gold.(map[string]any); ok && whole != 0 {
		for name, v := range g {
			if _, num := goldNumber(v); num {
				all[name] = whole
			}
		}
	}
	for name, v := range parts {
		all[name] = v
	}
	return json.Marshal(all)
}

// UnmarshalJSON reads a task as MarshalJSON writes it; "tolerance" and
// "decimals" may each be a number or an object by part.
func (t *Task) UnmarshalJSON(b []byte) error {
	var j taskJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*t = Task{ID: j.ID, Template: j.Template, Question: j.Question, Params: j.Params, AnswerType: j.AnswerType,
		Gold: j.Gold, Accept: j.Accept, Meta: j.Meta}
	if err := numberOrParts(j.Tolerance, &t.Tolerance, &t.PartTolerance); err != nil {
		return fmt.Errorf("task %s: tolerance: %w", j.ID, err)
	}
	if err := numberOrParts(j.Decimals, &t.Decimals, &t.PartDecimals); err != nil {
		return fmt.Errorf("task %s: decimals: %w", j.ID, err)
	}
	return nil
}

func numberOrParts[V int | float64](raw json.RawMessage, whole *V, parts *map[string]V) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '{' {
		return json.Unmarshal(raw, parts)
	}
	return json.Unmarshal(raw, whole)
}
