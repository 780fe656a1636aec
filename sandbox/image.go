package sandbox

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
)

// ImageRepo is the repository of ctxcode's kernel images.
const ImageRepo = "ctxcode-kernel"

// The recipe of the kernel image. Its hash is the image's tag, so a change
// here makes a new image and an unchanged recipe is never built twice.
var recipe = struct {
	Version  int
	Suite    string
	Variant  string
	Packages []string
	// Purge are packages removed after debootstrap, their dependents
	// left as they are: Debian's scipy depends on pythran, an ahead-of-
	// time compiler that pulls in gcc, g++ and the Boost headers (some
	// 460 MB: the image went from 1.38 GB to 921 MB) which nothing in a
	// kernel runs.
	Purge   []string
	Changes []string
}{
	Version: 2,
	Suite:   "bookworm",
	Variant: "minbase",
	// A data analyst's stack (DESIGN.md, "The kernel image"). numpy comes
	// with pandas.
	Packages: []string{"python3", "python3-ipython", "python3-pandas", "python3-scipy",
		"python3-sklearn", "python3-statsmodels", "python3-matplotlib"},
	Purge: []string{"python3-pythran", "libboost1.74-dev", "g++", "g++-12", "gcc", "gcc-12", "cpp", "cpp-12",
		"libstdc++-12-dev", "libgcc-12-dev", "libc6-dev", "libpython3.11-dev", "libpython3-dev", "python3-dev",
		"python3.11-dev", "libopenblas-dev", "libopenblas-pthread-dev", "libxsimd-dev", "binutils",
		"binutils-common", "binutils-x86-64-linux-gnu", "libbinutils", "libgprofng0", "libctf0", "libctf-nobfd0",
		"linux-libc-dev", "libexpat1-dev", "zlib1g-dev"},
	Changes: []string{
		"ENV LANG=C.UTF-8",
		// matplotlib draws to files, never to a display; its cache and
		// config go to the container's writable /tmp (the root is
		// read-only), so importing it writes no warning.
		"ENV MPLBACKEND=Agg",
		"ENV MPLCONFIGDIR=/tmp/matplotlib",
		"WORKDIR /session",
		`CMD ["python3"]`,
	},
}

func recipeHash() string {
	b, _ := json.Marshal(recipe)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

// KernelImage is the tag of the kernel image this ctxcode builds and uses.
func KernelImage() string { return ImageRepo + ":" + recipeHash() }

// ImageExists reports whether the daemon has ref.
func ImageExists(ctx context.Context, cli *client.Client, ref string) (bool, error) {
	_, err := cli.ImageInspect(ctx, ref)
	if isNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return true, nil
}

// BuildOptions tune Build. The zero value builds KernelImage with the
// mirror of the host's apt sources.
type BuildOptions struct {
	// Mirror is the Debian mirror. Empty means the one in the host's apt
	// sources (/etc/apt/sources.list.d/*.sources, /etc/apt/sources.list).
	Mirror string
	// Progress receives debootstrap's output, line by line. Nil discards it.
	Progress io.Writer
	// WorkDir holds the root filesystem while it is built. Empty means the
	// system's temporary folder.
	WorkDir string
}

// Build makes the kernel image offline from Debian packages: debootstrap a
// minimal root filesystem with Python 3, IPython and the analyst's libraries
// (recipe.Packages), then docker
// import it, tagged KernelImage() and labelled. It does nothing when that
// image exists already, and reports whether it built.
func Build(ctx context.Context, cli *client.Client, opts BuildOptions) (built bool, err error) {
	ref := KernelImage()
	if ok, err := ImageExists(ctx, cli, ref); err != nil || ok {
		return false, err
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return false, fmt.Errorf("building %s needs debootstrap: install it (apt-get install debootstrap), "+
			"or, where Docker can pull images, build sandbox/Dockerfile: docker build -t %s sandbox/", ref, ref)
	}
	if os.Geteuid() != 0 {
		return false, fmt.Errorf("building %s with debootstrap needs root: run `sudo ctxcode sandbox build`, "+
			"or, where Docker can pull images, build sandbox/Dockerfile: docker build -t %s sandbox/", ref, ref)
	}
	mirror := opts.Mirror
	if mirror == "" {
		if mirror, err = HostMirror(); err != nil {
			return false, err
		}
	}
	progress := opts.Progress
	if progress == nil {
		progress = io.Discard
	}
	root, err := os.MkdirTemp(opts.WorkDir, "ctxcode-rootfs-")
	if err != nil {
		return false, fmt.Errorf("make build folder: %w", err)
	}
	defer func() { err = errors.Join(err, removeRoot(root)) }()

	fmt.Fprintf(progress, "debootstrap %s (%s) from %s into %s\n", recipe.Suite, strings.Join(recipe.Packages, ", "), mirror, root)
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant="+recipe.Variant,
		"--include="+strings.Join(recipe.Packages, ","), recipe.Suite, root, mirror)
	cmd.Stdout, cmd.Stderr = progress, progress
	// On cancel, SIGTERM the whole group: debootstrap traps it and unmounts
	// what it mounted under root; SIGKILL comes only after WaitDelay.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		return false, fmt.Errorf("debootstrap from %s: %w (its output is above; check the mirror and the network)", mirror, err)
	}
	if len(recipe.Purge) > 0 {
		fmt.Fprintf(progress, "dpkg --purge %s\n", strings.Join(recipe.Purge, " "))
		purge := exec.CommandContext(ctx, "chroot", append([]string{root, "dpkg", "--purge", "--force-depends"}, recipe.Purge...)...)
		purge.Stdout, purge.Stderr = progress, progress
		if err := purge.Run(); err != nil {
			return false, fmt.Errorf("remove the build tools from the image: %w (its output is above)", err)
		}
	}
	for _, junk := range []string{"var/cache/apt/archives", "var/lib/apt/lists"} {
		_ = clearDir(filepath.Join(root, junk))
	}

	fmt.Fprintf(progress, "docker import as %s\n", ref)
	if err := importDir(ctx, cli, root, ref); err != nil {
		return false, err
	}
	return true, nil
}

// importDir streams the folder as a tar into docker import.
func importDir(ctx context.Context, cli *client.Client, root, ref string) error {
	tarCmd := exec.CommandContext(ctx, "tar", "-C", root, "--numeric-owner", "-cf", "-", ".")
	out, err := tarCmd.StdoutPipe()
	if err != nil {
		return err
	}
	var tarErr strings.Builder
	tarCmd.Stderr = &tarErr
	if err := tarCmd.Start(); err != nil {
		return fmt.Errorf("tar the root filesystem: %w", err)
	}
	changes := append([]string{
		fmt.Sprintf("LABEL %s=kernel", LabelImage),
		fmt.Sprintf("LABEL ctxcode.recipe=%s", recipeHash()),
	}, recipe.Changes...)
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: out, SourceName: "-"}, ref, image.ImportOptions{Changes: changes})
	if err == nil {
		err = readJSONMessages(rc)
		_ = rc.Close()
	}
	_, _ = io.Copy(io.Discard, out)
	if werr := tarCmd.Wait(); werr != nil && err == nil {
		err = fmt.Errorf("tar the root filesystem: %w: %s", werr, tarErr.String())
	}
	if err != nil {
		return fmt.Errorf("docker import %s: %w", ref, err)
	}
	return nil
}

// readJSONMessages drains a daemon progress stream and returns its error.
func readJSONMessages(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Error       string `json:"error"`
			ErrorDetail struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}

// removeRoot unmounts whatever is still mounted under root (debootstrap
// mounts /proc, and on some hosts binds /dev), deepest first, and removes
// root only when nothing is mounted there any more, so that a removal can
// never reach into the host's /proc or /dev.
func removeRoot(root string) error {
	mounts, err := mountsUnder(root)
	if err != nil {
		return fmt.Errorf("build folder %s left in place: %w", root, err)
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		_ = syscall.Unmount(mounts[i], syscall.MNT_DETACH)
	}
	if mounts, err = mountsUnder(root); err != nil || len(mounts) > 0 {
		return fmt.Errorf("build folder %s left in place: still mounted there: %v %v; unmount them and remove it", root, mounts, err)
	}
	return os.RemoveAll(root)
}

// mountsUnder lists the mount points under dir, in mount order.
func mountsUnder(dir string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out, nil
}

func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// HostMirror reads the Debian mirror from the host's apt sources: the first
// URI of a "deb" source that is not a security or updates suite.
func HostMirror() (string, error) {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, f := range files {
		if m := mirrorDeb822(f); m != "" {
			return m, nil
		}
	}
	lists, _ := filepath.Glob("/etc/apt/sources.list.d/*.list")
	for _, f := range append([]string{"/etc/apt/sources.list"}, lists...) {
		if m := mirrorOneLine(f); m != "" {
			return m, nil
		}
	}
	return "", errors.New("no Debian mirror found in /etc/apt/sources.list or /etc/apt/sources.list.d: " +
		"name one with --mirror URL, or build sandbox/Dockerfile where Docker can pull images")
}

// mirrorDeb822 reads a deb822 .sources file (stanzas of "Key: value").
func mirrorDeb822(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	for _, stanza := range strings.Split(string(b), "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, " ") {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
			}
		}
		if !strings.Contains(" "+fields["types"]+" ", " deb ") || strings.EqualFold(fields["enabled"], "no") {
			continue
		}
		if suites := fields["suites"]; suites == "" || strings.Contains(suites, "security") {
			continue
		}
		if uris := strings.Fields(fields["uris"]); len(uris) > 0 {
			return uris[0]
		}
	}
	return ""
}

// mirrorOneLine reads a one-line-style sources.list.
func mirrorOneLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[0] != "deb" {
			continue
		}
		rest := fields[1:]
		if strings.HasPrefix(rest[0], "[") { // options: [arch=amd64 ...]
			for len(rest) > 0 && !strings.HasSuffix(rest[0], "]") {
				rest = rest[1:]
			}
			if len(rest) > 0 {
				rest = rest[1:]
			}
		}
		if len(rest) >= 2 && !strings.Contains(rest[1], "security") {
			return rest[0]
		}
	}
	return ""
}
