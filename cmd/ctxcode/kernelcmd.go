package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ctxcode/ctxcode/kernel"
)

var kernelUsage = helpText("kernel")

func runKernel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("kernel: missing subcommand\n\n%s", kernelUsage)
	}
	switch args[0] {
	case "driver":
		_, err := io.WriteString(stdout, kernel.DriverSource())
		return err
	case "serve":
		fs := newFlagSet("kernel serve", kernelUsage, stderr)
		lang := fs.String("lang", "go", "kernel language (only go is served by ctxcode itself)")
		if err := fs.parse(args[1:], 0, ""); err != nil {
			return err
		}
		switch *lang {
		case "go":
			return kernel.ServeGoStdio(ctx)
		case "python":
			return usagef("kernel serve: the Python kernel is not served by ctxcode; run: python3 -u -c \"$(ctxcode kernel driver)\"")
		}
		return usagef("kernel serve: unknown --lang %q: expected go", *lang)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, kernelUsage)
		return nil
	}
	return usagef("kernel: unknown subcommand %q\n\n%s", args[0], kernelUsage)
}
