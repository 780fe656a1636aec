package sandbox

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/ctxcode/ctxcode/kernel"
)

// HasModule says whether the Python kernels opts start can import module,
// without importing it. For ctxcode's kernel image the recipe says (its
// Debian packages are python3-<module>); any other image, and this host's
// interpreter (Open's choice where Docker does not answer), are asked in a
// fresh kernel (importlib.util.find_spec).
func HasModule(ctx context.Context, opts OpenOptions, module string) (bool, error) {
	if opts.Kind != KindLocal {
		image := KernelImage()
		if opts.Docker != nil && opts.Docker.Image != "" {
			image = opts.Docker.Image
		}
		docker := true
		if opts.Kind == KindAuto && opts.HostFallback { // Open's choice: this host when Docker does not answer
			cli, err := Connect(ctx, opts.Host)
			if docker = err == nil; docker {
				_ = cli.Close()
			}
		}
		if docker && image == KernelImage() {
			return slices.Contains(recipe.Packages, "python3-"+module), nil
		}
	}
	opts.Lang, opts.DataDir = kernel.Python, ""
	k, stop, err := Start(ctx, opts, io.Discard)
	defer func() { _ = stop() }()
	if err != nil {
		return false, err
	}
	res, err := k.Execute(ctx, fmt.Sprintf("import importlib.util\nANSWER(importlib.util.find_spec(%q) is not None)", module),
		kernel.ExecOptions{Timeout: 30 * time.Second})
	switch {
	case err != nil:
		return false, err
	case !res.Answered():
		return false, fmt.Errorf("ask the kernel for %s: %s", module, res.Stderr)
	}
	return string(res.Answer) == "true", nil
}
