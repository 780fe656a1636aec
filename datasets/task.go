package datasets

// AnswerType says how a task's answer is compared with its gold.
type AnswerType string

// Answer types.
const (
	Integer AnswerType = "integer" // exactly; "42" and 42.0 are 42
	Number  AnswerType = "number"  // within the task's tolerance: 1e-6 relative by default
	String  AnswerType = "string"  // trimmed and case-folded
	Set     AnswerType = "set"     // of strings, in any order
	List    AnswerType = "list"    // of strings, in order
	Record  AnswerType = "record"  // named parts, each a number, string or boolean, graded part by part
)

// Task is one graded question about a dataset.
type Task struct {
	ID         string         `json:"id"`       // "<tier>-t<N>-<k>", e.g. "xl-t3-2"
	Template   string         `json:"template"` // "t1" … "t8"
	Question   string         `json:"question"`
	Params     map[string]any `json:"params"` // the ids and values the question uses
	AnswerType AnswerType     `json:"answer_type"`
	// Gold is the answer: an int (Integer), a float64 (Number), a string
	// (String), a []string (Set, List) or a map[string]any of parts, each a
	// float64, a string or a bool (Record).
	Gold any `json:"gold"`
	// Accept lists other answers that count as right, each in Gold's
	// type: another form of the same answer, such as an id for a name.
	Accept []any `json:"accept,omitempty"`
	// Tolerance is how far a Number answer may be from the gold, relative
	// to it: |answer-gold| <= Tolerance*|gold|. Zero means
	// DefaultTolerance. For a gold of exactly 0, where no relative bound
	// can hold, it is absolute: |answer| <= Tolerance.
	Tolerance float64 `json:"tolerance,omitempty"`
	// Decimals, when positive, says that the question asks for a Number
	// rounded to that many decimals and the gold is so rounded: an answer
	// within one unit of the last decimal is right too (on a tie, the
	// gold's rounding and the reader's may differ by one unit; a more
	// precise answer is within half a unit).
	Decimals int `json:"decimals,omitempty"`
	// PartTolerance and PartDecimals are a Record's Tolerance and Decimals
	// by part, for its numeric parts; a part they do not name takes the
	// task's. In JSON, "tolerance" and "decimals" are an object by part
	// when these are set, a number otherwise.
	PartTolerance map[string]float64 `json:"-"`
	PartDecimals  map[string]int     `json:"-"`
	// Meta is free metadata the task came with ({"level": "hard",
	// "concepts": ["Correlation Analysis"]}): kept with it, used to group
	// results (report --by).
	Meta map[string]any `json:"meta,omitempty"`
}

// DefaultTolerance is the relative tolerance of a Number task that gives
// none: what separates the same number computed in two orders of
// floating-point additions from a different number.
const DefaultTolerance = 1e-6
