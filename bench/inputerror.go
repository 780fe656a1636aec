package bench

import "fmt"

// InputError is bad input from the user (exit code 2 in ctxcode): what was
// wrong, what was expected and what to do.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputErrorf(format string, args ...any) error {
	return &InputError{Msg: fmt.Sprintf(format, args...)}
}
