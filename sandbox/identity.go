package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ctxcode/ctxcode/kernel"
)

// RuntimeIdentity names where the kernels these options start will run,
// before they start, for a cache of what they print (prefixes.CacheKey):
// the Docker image's id (imageID, see ImageID: an id, not a tag, which may
// move), or the local interpreter's resolved path with its size and
// modification time; with the options that change what a kernel prints
// (NoIPython, and Local.LinkData on this host). It is "" when it cannot
// tell: Docker's image id unknown (imageID "") without HostFallback, or no
// interpreter found; then nothing should be cached. A shim or a PATH change
// can put another interpreter behind the same identity: a cache's user
// checks the live outputs against the cached ones.
func (o OpenOptions) RuntimeIdentity(imageID string) string {
	lang := o.Lang
	if lang == "" {
		lang = kernel.Python
	}
	flags := ""
	if o.NoIPython {
		flags += " no-ipython"
	}
	if o.Kind == KindKubernetes {
		return "" // the cluster's image is known by its name only, which may move
	}
	if o.Kind != KindLocal {
		if imageID != "" {
			return "docker " + imageID + " " + string(lang) + flags
		}
		if !o.HostFallback {
			return ""
		}
	}
	if o.Local.LinkData {
		flags += " data-link"
	}
	if lang == kernel.Go {
		return "local go" + flags // the driver's version names the binary
	}
	python, err := kernel.FindPython(o.Python)
	if err != nil {
		return ""
	}
	if real, err := filepath.EvalSymlinks(python); err == nil {
		python = real
	}
	st, err := os.Stat(python)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("local %s %d %d%s", python, st.Size(), st.ModTime().UnixNano(), flags)
}

// ImageID is the id of image (default: DefaultConfig's, the kernel image)
// at the Docker daemon h names (see Connect).
func ImageID(ctx context.Context, h Host, image string) (string, error) {
	if image == "" {
		image = DefaultConfig().Image
	}
	cli, err := Connect(ctx, h)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	info, err := cli.ImageInspect(ctx, image)
	if err != nil {
		return "", err
	}
	if info.ID == "" {
		return "", errors.New("the image has no id")
	}
	return info.ID, nil
}
