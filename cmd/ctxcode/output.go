package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/ctxcode/ctxcode/internal/outfile"
)

// The rules for files and folders the user names are internal/outfile's;
// these adapters give its refusals (*outfile.InputError) the command or
// flag they came from, as usage errors (exit 2).

// fileErr maps err of outfile to cmd's: a refusal is a usage error
// prefixed with prefix and sep, anything else is wrapped.
func fileErr(prefix, sep string, err error) error {
	var ie *outfile.InputError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ie):
		return usagef("%s%s%v", prefix, sep, ie)
	default:
		return fmt.Errorf("%s: %w", prefix, err)
	}
}

func checkOutput(cmd, path string, force bool) error {
	return fileErr(cmd, ": ", outfile.CheckOutput(path, force))
}

func checkDataDir(flag, dir string) error {
	return fileErr(flag, " ", outfile.CheckDataDir(dir))
}

func createOutput(cmd, path string, force bool) (*os.File, error) {
	f, err := outfile.Create(path, force)
	return f, fileErr(cmd, ": ", err)
}

func writeAtomic(cmd, path string, data []byte, force bool) error {
	return fileErr(cmd, ": ", outfile.WriteAtomic(path, data, force))
}

func unwrapPath(err error) error { return outfile.UnwrapPath(err) }
