package session

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ctxcode/ctxcode/kernel"
)

func TestCellRender(t *testing.T) {
	tests := []struct {
		name string
		cell Cell
		want string
	}{
		{"assignment", Cell{Code: "x = 41", Result: kernel.Result{Count: 1, Status: kernel.StatusOK}}, "In [1]: x = 41\n"},
		{"value", Cell{Code: "x + 1", Result: kernel.Result{Count: 2, Status: kernel.StatusOK, Value: "42"}}, "In [2]: x + 1\nOut[2]: 42\n"},
		{"multi-line code and value",
			Cell{Code: "for i in range(2):\n    print(i)\n[1,\n 2]", Result: kernel.Result{Count: 12, Status: kernel.StatusOK, Stdout: "0\n1\n", Value: "[1,\n 2]"}},
			"In [12]: for i in range(2):\n    ...:     print(i)\n    ...: [1,\n    ...:  2]\n0\n1\nOut[12]: \n[1,\n 2]\n"},
		{"error",
			Cell{Code: "1/0", Result: kernel.Result{Count: 3, Status: kernel.StatusError, Stdout: "partial",
				Error: &kernel.ErrorInfo{Name: "ZeroDivisionError", Value: "division by zero", Traceback: "Cell In[3], line 1\n    1/0\nZeroDivisionError: division by zero"}}},
			"In [3]: 1/0\npartial\nCell In[3], line 1\n    1/0\nZeroDivisionError: division by zero\n"},
		{"error without traceback",
			Cell{Code: "x", Result: kernel.Result{Count: 4, Status: kernel.StatusTimeout, Error: &kernel.ErrorInfo{Name: "CellTimeout", Value: "too slow"}}},
			"In [4]: x\nCellTimeout: too slow\n"},
		{"answer", Cell{Code: "ANSWER(3)", Result: kernel.Result{Count: 5, Status: kernel.StatusOK, Answer: json.RawMessage(`3`)}}, "In [5]: ANSWER(3)\nANSWER: 3\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.cell.Render())
		})
	}
}
