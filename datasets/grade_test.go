package datasets

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	gradeInt    = Task{ID: "s-t1-1", AnswerType: Integer, Gold: 42}
	gradeBig    = Task{ID: "xl-t1-1", AnswerType: Integer, Gold: 1234}
	gradeNum    = Task{ID: "s-t4-1", AnswerType: Number, Gold: 3.14, Decimals: 2}
	gradeExact  = Task{ID: "u1", AnswerType: Number, Gold: 0.004}
	gradeStr    = Task{ID: "s-t3-1", AnswerType: String, Gold: "Platform Core"}
	gradeSet    = Task{ID: "s-t2-1", AnswerType: Set, Gold: []string{"K00012", "K00034", "K00056"}}
	gradeNumSet = Task{ID: "s-t6-1", AnswerType: Set, Gold: []string{"3", "5"}}
	gradeList   = Task{ID: "s-t8-1", AnswerType: List, Gold: []string{"Ada Lovelace", "Grace Hopper", "Alan Turing"}}
)

func TestGrade(t *testing.T) {
	tests := []struct {
		name   string
		task   Task
		answer string
		want   bool
		reason []string // substrings the reason must contain
	}{
		// Integer.
		{"integer bare", gradeInt, "42", true, nil},
		{"integer as float", gradeInt, "42.0", true, nil},
		{"integer with exponent", gradeInt, "4.2e1", true, nil},
		{"integer as JSON string", gradeInt, `"42"`, true, nil},
		{"integer numpy repr", gradeInt, "np.int64(42)", true, nil},
		{"integer ANSWER prefix", gradeInt, "ANSWER: 42", true, nil},
		{"integer ANSWER call", gradeInt, "ANSWER(42)", true, nil},
		{"integer in backticks", gradeInt, "  `42`\n", true, nil},
		{"integer in code fence", gradeInt, "```json\n42\n```", true, nil},
		{"integer thousands separator", gradeBig, "1,234", true, nil},
		{"integer off by one", gradeInt, "41", false, []string{"expected 42, got 41"}},
		{"integer with fraction", gradeInt, "42.5", false, []string{"expected 42", "42.5", "not an integer"}},
		{"integer with trailing text", gradeInt, "42abc", false, []string{"expected 42", `"42abc"`}},
		{"integer in words", gradeInt, "forty-two", false, []string{"expected 42"}},
		{"integer Python True", gradeInt, "True", false, []string{"expected 42", "boolean"}},
		{"integer JSON true", gradeInt, "true", false, []string{"boolean"}},
		{"integer as list", gradeInt, "[42]", false, []string{"expected 42", "a list of 1 element"}},
		{"integer as dict", gradeInt, `{"answer": 42}`, false, []string{"a dict"}},
		{"integer None", gradeInt, "None", false, []string{"expected 42", "no answer"}},
		{"integer JSON null", gradeInt, "null", false, []string{"no answer"}},
		{"integer empty", gradeInt, "", false, []string{"expected 42", "no answer"}},
		{"integer only backticks", gradeInt, " `` ", false, []string{"no answer"}},
		{"integer gold after JSON", Task{AnswerType: Integer, Gold: 42.0}, "42", true, nil},

		// Number: relative by default; one unit of the last decimal for a
		// gold rounded to decimals.
		{"number exact", gradeNum, "3.14", true, nil},
		{"number more precise", gradeNum, "3.141", true, nil},
		{"number rounded the other way", gradeNum, "3.15", true, nil},
		{"number rounded the other way below", gradeNum, "3.13", true, nil},
		{"number numpy repr", gradeNum, "np.float64(3.1415)", true, nil},
		{"number as Python string", gradeNum, "'3.14'", true, nil},
		{"number integer gold", Task{AnswerType: Number, Gold: 3.0}, "3", true, nil},
		{"number outside rounding", gradeNum, "3.16", false, []string{"expected 3.14 (±0.01, rounded to 2 decimals), got 3.16"}},
		{"number small gold not zero", gradeExact, "0", false, []string{"expected 0.004 (±1e-06 relative), got 0"}},
		{"number small gold off by 0.01", gradeExact, "0.01", false, []string{"expected 0.004"}},
		{"number small gold float error", gradeExact, "0.0040000000001", true, nil},
		{"number relative default", Task{AnswerType: Number, Gold: 1234567.0}, "1234567.5", true, nil},
		{"number relative default outside", Task{AnswerType: Number, Gold: 1234567.0}, "1234569", false, []string{"±1e-06 relative"}},
		{"number task tolerance", Task{AnswerType: Number, Gold: 200.0, Tolerance: 0.01}, "201.9", true, nil},
		{"number task tolerance outside", Task{AnswerType: Number, Gold: 200.0, Tolerance: 0.01}, "202.1", false, []string{"expected 200 (±0.01 relative), got 202.1"}},
		{"number zero gold absolute floor", Task{AnswerType: Number, Gold: 0.0}, "1e-7", true, nil},
		{"number zero gold outside floor", Task{AnswerType: Number, Gold: 0.0}, "0.001", false, []string{"expected 0 (±1e-06 absolute, the gold being 0), got 0.001"}},
		{"number zero gold task tolerance", Task{AnswerType: Number, Gold: 0.0, Tolerance: 0.01}, "-0.005", true, nil},
		{"number large rounded gold", Task{AnswerType: Number, Gold: 12345.66, Decimals: 2}, "12345.67", true, nil},
		{"number negated", gradeNum, "-3.14", false, []string{"expected 3.14"}},
		{"number nan", gradeNum, "nan", false, []string{"expected 3.14"}},
		{"number as list", gradeNum, "[3.14]", false, []string{"a list"}},

		// Accepted forms.
		{"accept an id for a name", Task{AnswerType: String, Gold: "Onyx", Accept: []any{"T30"}}, "t30", true, nil},
		{"accept the gold still", Task{AnswerType: String, Gold: "Onyx", Accept: []any{"T30"}}, "Onyx", true, nil},
		{"accept names the forms", Task{AnswerType: String, Gold: "Onyx", Accept: []any{"T30"}}, "T29", false, []string{`expected "Onyx", got "T29" (also accepted: "T30")`}},
		{"accept a set of ids", Task{AnswerType: Set, Gold: []string{"Ada", "Alan"}, Accept: []any{[]string{"U1", "U2"}}}, "U2, U1", true, nil},
		{"accept a number", Task{AnswerType: Number, Gold: 0.5, Accept: []any{50.0}}, "50", true, nil},
		{"accept after JSON", Task{AnswerType: Set, Gold: []any{"Ada"}, Accept: []any{[]any{"U1"}}}, "U1", true, nil},
		{"accept that does not fit", Task{ID: "u2", AnswerType: Integer, Gold: 3, Accept: []any{"three"}}, "4", false, []string{"cannot grade task u2"}},

		// String.
		{"string exact", gradeStr, "Platform Core", true, nil},
		{"string case and space", gradeStr, "  platform CORE \n", true, nil},
		{"string JSON literal", gradeStr, `"Platform Core"`, true, nil},
		{"string Python literal", gradeStr, `'platform core'`, true, nil},
		{"string ANSWER and backticks", gradeStr, "ANSWER: `Platform Core`", true, nil},
		{"string Unicode folding", Task{AnswerType: String, Gold: "Équipe Été"}, "ÉQUIPE été", true, nil},
		{"string escaped quote", Task{AnswerType: String, Gold: "O'Brien Team"}, `'O\'Brien Team'`, true, nil},
		{"string JSON unicode escape", Task{AnswerType: String, Gold: "Équipe"}, `"\u00c9quipe"`, true, nil},
		{"string typo", gradeStr, "Platfrom Core", false, []string{`expected "Platform Core", got "Platfrom Core"`}},
		{"string wrong team", gradeStr, "Payments Web", false, []string{`expected "Platform Core"`}},
		{"string as list", gradeStr, `["Platform Core"]`, false, []string{`expected "Platform Core"`, "a list"}},
		{"string None", gradeStr, "None", false, []string{"no answer"}},

		// Set.
		{"set JSON list", gradeSet, `["K00012","K00034","K00056"]`, true, nil},
		{"set Python set other order", gradeSet, `{'K00056', 'K00012', 'K00034'}`, true, nil},
		{"set Python tuple", gradeSet, `('K00012', 'K00034', "K00056")`, true, nil},
		{"set bare tuple", gradeSet, `'K00012', 'K00034', 'K00056'`, true, nil},
		{"set frozenset repr", gradeSet, `frozenset({'K00012', 'K00034', 'K00056'})`, true, nil},
		{"set comma text", gradeSet, "K00034, K00012,K00056", true, nil},
		{"set comma text lower case", gradeSet, "k00012, k00034, k00056", true, nil},
		{"set unquoted in brackets", gradeSet, "[K00012, K00034, K00056]", true, nil},
		{"set one per line", gradeSet, "K00012\nK00034\nK00056\n", true, nil},
		{"set repr inside JSON string", gradeSet, `"{'K00012', 'K00034', 'K00056'}"`, true, nil},
		{"set in python fence", gradeSet, "```python\n{'K00012', 'K00034', 'K00056'}\n```", true, nil},
		{"set duplicate ignored", gradeSet, `["K00012","K00012","K00034","K00056"]`, true, []string{`duplicates ignored: "K00012"`}},
		{"set single bare word", Task{AnswerType: Set, Gold: []string{"K00012"}}, "K00012", true, nil},
		{"set missing one", gradeSet, `["K00012","K00034"]`, false, []string{`missing "K00056"`, "expected 3 elements, got 2"}},
		{"set one extra", gradeSet, `["K00012","K00034","K00056","K00099"]`, false, []string{`unexpected "K00099"`, "expected 3 elements"}},
		{"set missing and extra", gradeSet, `K00012, K00034, K00099`, false, []string{`missing "K00056"; unexpected "K00099"`}},
		{"set duplicate does not fill a gap", gradeSet, `["K00012","K00012","K00034"]`, false, []string{`missing "K00056"`}},
		{"set empty Python set", gradeSet, "set()", false, []string{`missing "K00012", "K00034", "K00056"`}},
		{"set as number", gradeSet, "42", false, []string{`expected {"K00012", "K00034", "K00056"}`, "the number 42"}},
		{"set as dict", gradeSet, `{"a": 1}`, false, []string{"expected {", "a dict"}},
		{"set nested list", gradeSet, `[["K00012","K00034","K00056"]]`, false, []string{"element 1 is a list"}},
		{"set with None element", gradeSet, `["K00012", None]`, false, []string{"element 2 is None"}},
		{"set None", gradeSet, "None", false, []string{"no answer"}},
		{"set empty text", gradeSet, "  ", false, []string{"no answer"}},

		// Numbers inside sets.
		{"number set as numbers", gradeNumSet, "[5, 3.0]", true, nil},
		{"number set as strings", gradeNumSet, `['3.0', '5']`, true, nil},
		{"number set as text", gradeNumSet, "3, 5", true, nil},
		{"number set wrong", gradeNumSet, "[3, 6]", false, []string{`missing "5"; unexpected "6"`}},

		// List.
		{"list JSON", gradeList, `["Ada Lovelace", "Grace Hopper", "Alan Turing"]`, true, nil},
		{"list Python tuple any case", gradeList, `('ada lovelace', 'GRACE HOPPER', 'Alan Turing')`, true, nil},
		{"list comma text", gradeList, "Ada Lovelace, Grace Hopper, Alan Turing", true, nil},
		{"list wrong order", gradeList, `["Ada Lovelace", "Alan Turing", "Grace Hopper"]`, false,
			[]string{`expected ["Ada Lovelace", "Grace Hopper", "Alan Turing"]`, "position 2 differs"}},
		{"list too long", gradeList, `["Ada Lovelace", "Grace Hopper", "Alan Turing", "Edsger Dijkstra"]`, false,
			[]string{"4 elements, not 3"}},
		{"list too short", gradeList, `["Ada Lovelace", "Grace Hopper"]`, false, []string{"2 elements, not 3"}},
		{"list with duplicate", gradeList, `["Ada Lovelace", "Ada Lovelace", "Alan Turing"]`, false, []string{"position 2 differs"}},
		{"list as Python set", gradeList, `{'Ada Lovelace', 'Grace Hopper', 'Alan Turing'}`, false, []string{"a set has no order"}},
		{"list nested", gradeList, `[["Ada Lovelace"], ["Grace Hopper"], ["Alan Turing"]]`, false, []string{"element 1 is a list"}},

		// Tasks that cannot be graded.
		{"unknown answer type", Task{ID: "x", AnswerType: "date", Gold: "2025-01-01"}, "2025-01-01", false,
			[]string{"unknown answer type"}},
		{"gold of the wrong type", Task{ID: "x", AnswerType: Integer, Gold: "42"}, "42", false,
			[]string{"gold string does not fit"}},
		{"set gold after JSON", Task{AnswerType: Set, Gold: []any{"a", "b"}}, "b, a", true, nil},
	}
	require.GreaterOrEqual(t, len(tests), 40)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Grade(tt.task, tt.answer)
			assert.Equal(t, tt.want, got, "reason: %s", reason)
			if !tt.want {
				assert.NotEmpty(t, reason)
			}
			for _, s := range tt.reason {
				assert.Contains(t, reason, s)
			}
			if tt.want && tt.reason == nil {
				assert.Empty(t, reason)
			}
		})
	}
}

// The set comparison keys elements by foldKey, so it must agree with
// strings.EqualFold, including runes outside ASCII that fold into it.
func TestGradeFoldKeyMatchesEqualFold(t *testing.T) {
	words := []string{"k", "K", "\u212a", "s", "S", "\u017f", "ß", "SS", "σ", "ς", "Σ", "é", "É", "ǅ", "ǆ", "Ǆ", "\xff", "\xfe", "1", ""}
	for _, a := range words {
		for _, b := range words {
			assert.Equal(t, strings.EqualFold(a, b), foldKey(a) == foldKey(b), "%q vs %q", a, b)
		}
	}
}

// A reason quotes a bounded part of the answer, however long it is.
func TestGradeReasonIsBounded(t *testing.T) {
	var ids []string
	for i := range 5000 {
		ids = append(ids, strings.Repeat("x", i%200)+"K")
	}
	huge := strings.Join(ids, ", ")
	for _, task := range []Task{gradeInt, gradeNum, gradeStr, gradeSet, gradeList} {
		ok, reason := Grade(task, huge)
		assert.False(t, ok)
		assert.Less(t, len(reason), 2000, "%s: %s", task.AnswerType, reason)
	}
}

func FuzzGrade(f *testing.F) {
	for _, s := range []string{
		"42", "42.0", "42abc", "np.int64(42)", "ANSWER: `42`", "```json\n[1]\n```", "3.141",
		`["K00012","K00034"]`, `{'a', "b"}`, `('a',)`, "set()", "None", "null", "", "a, b",
		`{"a": 1}`, `[[["x"]]]`, `'\u00e9\ud83d\ude00\x41\U0001F600'`, `"\`, "[", "(", "{1:", "1,234",
		"frozenset({1})", "-", ".", "1e999", "ANSWER(", "```", strings.Repeat("[", 200),
	} {
		f.Add(s)
	}
	tasks := []Task{gradeInt, gradeBig, gradeNum, gradeStr, gradeSet, gradeNumSet, gradeList}
	f.Fuzz(func(t *testing.T, answer string) {
		for _, task := range tasks {
			ok, reason := Grade(task, answer) // must not panic
			if !ok && reason == "" {
				t.Errorf("%s %q: wrong without a reason", task.AnswerType, answer)
			}
			if len(reason) > 16<<10 {
				t.Errorf("%s %q: reason of %d bytes", task.AnswerType, answer, len(reason))
			}
		}
	})
}

func BenchmarkGrade(b *testing.B) {
	ids := Task{AnswerType: Set, Gold: []string{"K00012", "K00034", "K00056", "K00078", "K00090"}}
	cases := []struct {
		name   string
		task   Task
		answer string
	}{
		{"set-of-5-python", ids, "{'K00090', 'K00012', 'K00056', 'K00034', 'K00078'}"},
		{"set-of-5-json", ids, `["K00012", "K00034", "K00056", "K00078", "K00090"]`},
		{"integer", gradeInt, "42"},
		{"number", gradeNum, "3.141"},
		{"list-of-3", gradeList, `["Ada Lovelace", "Grace Hopper", "Alan Turing"]`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if ok, reason := Grade(c.task, c.answer); !ok {
					b.Fatalf("graded wrong: %s", reason)
				}
			}
		})
	}
}
