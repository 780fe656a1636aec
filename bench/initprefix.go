package bench

import (
	"context"
	"fmt"
	"io"

	"github.com/ctxcode/ctxcode/kernel"
	"github.com/ctxcode/ctxcode/prefixes"
	"github.com/ctxcode/ctxcode/sandbox"
)

// InitPrefix writes, with prefix init, the Python prefix and its control
// of a data folder that brings none, for the kernels opts start: tables
// bound as pandas DataFrames where those kernels have pandas (the kernel
// image does), as lists of dicts elsewhere (a host without it); its data
// is checked against the memory limit of those kernels. warn hears what
// init skipped and what to know of the prefix. A folder init cannot write
// a prefix for is an *InitError.
func InitPrefix(ctx context.Context, dir string, opts sandbox.OpenOptions, warn io.Writer) (*prefixes.InitResult, error) {
	style, err := prefixStyle(ctx, opts)
	if err != nil {
		return nil, err
	}
	return initPrefixStyle(dir, opts, style, warn)
}

// prefixStyle is the style InitPrefix writes for the kernels opts start:
// frames where they have pandas, records elsewhere.
func prefixStyle(ctx context.Context, opts sandbox.OpenOptions) (prefixes.Style, error) {
	frames, err := sandbox.HasModule(ctx, opts, "pandas")
	switch {
	case err != nil:
		return "", err
	case frames:
		return prefixes.StyleFrames, nil
	}
	return prefixes.StyleRecords, nil
}

// initPrefixStyle is InitPrefix with its style known (prefixStyle), for a
// caller that writes the prefixes of many folders.
func initPrefixStyle(dir string, opts sandbox.OpenOptions, style prefixes.Style, warn io.Writer) (*prefixes.InitResult, error) {
	memory := int64(0) // a local kernel has no memory limit of ctxcode's
	if opts.Kind != sandbox.KindLocal {
		memory = sandbox.DefaultConfig().Memory
		if opts.Docker != nil {
			memory = opts.Docker.Memory
		}
	}
	res, err := prefixes.InitWith(dir, prefixes.InitOptions{Lang: kernel.Python, Style: style, MemoryLimit: memory, FollowLinks: opts.FollowLinks})
	res.WriteNotes(warn)
	if err != nil {
		return nil, &InitError{Dir: dir, Err: err}
	}
	return res, nil
}

// InitError is prefix init's failure to write a prefix for a data folder:
// the data's (no loadable file), not the machine's.
type InitError struct {
	Dir string
	Err error
}

func (e *InitError) Error() string {
	return fmt.Sprintf("prefix init could not write a prefix for %s: %v", e.Dir, e.Err)
}

func (e *InitError) Unwrap() error { return e.Err }
