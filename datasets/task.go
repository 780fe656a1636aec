package datasets

// AnswerType says how a task's answer is compared with its gold.
type AnswerType string

// Answer types.
const (
	Integer AnswerType = "integer" // exactly; "42" and 42.0 are 42
	Number  AnswerType = "number"  // within 0.01
	String  AnswerType = "string"  // trimmed and case-folded
	Set     AnswerType = "set"     // of strings, in any order
	List    AnswerType = "list"    // of strings, in order
)

// Task is one graded question about a dataset.
type Task struct {
	ID         string         `json:"id"`       // "<tier>-t<N>-<k>", e.g. "xl-t3-2"
	Template   string         `json:"template"` // "t1" … "t8"
	Question   string         `json:"question"`
	Params     map[string]any `json:"params"` // the ids and values the question uses
	AnswerType AnswerType     `json:"answer_type"`
	// Gold is the answer: an int (Integer), a float64 (Number), a string
	// (String) or a []string (Set, List).
	Gold any `json:"gold"`
}
