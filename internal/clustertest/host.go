package clustertest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ctxcode/ctxcode/internal/proctest"
)

// hostPaths are folders outside the cluster's own that the kubelet, the
// CNI plugins or containerd's shims write to whatever they are told: the
// kubelet's device-plugin socket and container log links, libcni's cache.
// What the cluster put there is removed at the end, and a folder it made
// is removed with it. (The shims' sockets, under /run/containerd/s, are
// removed one by one: the machine's own containerd keeps its shims' there
// too.)
var hostPaths = []string{"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/var/lib/cni"}

// kernelTunables are the settings the kubelet changes on start
// (protectKernelDefaults off); they are put back at the end.
var kernelTunables = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
}

// hostState is what the machine was like before the cluster started.
type hostState struct {
	existed  map[string]bool   // hostPaths
	tunables map[string]string // kernelTunables
	entries  map[string]bool   // the entries of the hostPaths that existed
}

func saveHost() (*hostState, error) {
	h := &hostState{existed: map[string]bool{}, tunables: map[string]string{}, entries: map[string]bool{}}
	for _, p := range hostPaths {
		entries, err := os.ReadDir(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		h.existed[p] = true
		for _, e := range entries {
			h.entries[filepath.Join(p, e.Name())] = true
		}
	}
	for _, t := range kernelTunables {
		b, err := os.ReadFile(filepath.Join("/proc/sys", t))
		if err != nil {
			return nil, err
		}
		h.tunables[t] = strings.TrimSpace(string(b))
	}
	return h, nil
}

// changes lists what differs from the state saved: a file or folder made
// in hostPaths, a kernel setting changed.
func (h *hostState) changes() []string {
	var out []string
	for _, p := range hostPaths {
		entries, err := os.ReadDir(p)
		if err != nil {
			continue
		}
		if !h.existed[p] {
			out = append(out, p)
			continue
		}
		for _, e := range entries {
			if path := filepath.Join(p, e.Name()); !h.entries[path] {
				out = append(out, path)
			}
		}
	}
	for t, v := range h.tunables {
		if b, err := os.ReadFile(filepath.Join("/proc/sys", t)); err != nil || strings.TrimSpace(string(b)) != v {
			out = append(out, fmt.Sprintf("%s: %q, was %q", t, bytes.TrimSpace(b), v))
		}
	}
	sort.Strings(out)
	return out
}

// restore removes what was made in hostPaths since saveHost and puts the
// kernel settings back.
func (h *hostState) restore() []error {
	var errs []error
	for _, p := range hostPaths {
		if !h.existed[p] {
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		entries, _ := os.ReadDir(p)
		for _, e := range entries {
			if path := filepath.Join(p, e.Name()); !h.entries[path] {
				if err := os.RemoveAll(path); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	for t, v := range h.tunables {
		path := filepath.Join("/proc/sys", t)
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == v {
			continue
		}
		if err := os.WriteFile(path, []byte(v+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("put %s back to %s: %w", t, v, err))
		}
	}
	return errs
}

// cgroupHierarchies are the folders of this machine's cgroup v1
// hierarchies (cpu, memory, name=systemd, ...), from /proc/self/mountinfo.
func cgroupHierarchies() ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		// ... mountpoint ... - fstype source options
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) > 4 && len(g) > 0 && g[0] == "cgroup" {
			out = append(out, f[4])
		}
	}
	return out, nil
}

// makeCgroupRoot makes the kubelet's cgroup root in every hierarchy (the
// kubelet refuses a root that does not exist), with cpuset's cpus and
// mems those of the top, which a new cpuset lacks.
func makeCgroupRoot(root string) error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		dir := filepath.Join(h, root)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("make the kubelet's cgroup root: %w", err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if b, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					return fmt.Errorf("set %s of the kubelet's cgroup root: %w", f, err)
				}
			}
		}
	}
	return nil
}

// removeCgroupRoot removes the cgroup root in every hierarchy, deepest
// cgroups first. Their processes are gone by then; a cgroup still busy
// is an error.
func removeCgroupRoot(root string) []error {
	hs, err := cgroupHierarchies()
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, h := range hs {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, d := range dirs {
			if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errs
}

// teardown stops the cluster and removes what it made, here and
// elsewhere on the machine (see the package comment).
func (c *Cluster) teardown() error {
	var errs []error
	// The kubelet first, so that it restarts nothing; then what gives it
	// work.
	for _, name := range []string{"kubelet", "kube-scheduler", "kube-controller-manager"} {
		if err := c.proc(name).stop(); err != nil {
			errs = append(errs, err)
		}
	}
	// The containers, by the first process of each (runc's state under
	// the cluster's runc root), and what their shims listen on.
	sockets := c.shimSockets()
	c.shims = append(c.shims, sockets...)
	errs = append(errs, c.killContainers()...)
	for _, name := range []string{"containerd", "kube-apiserver", "etcd"} {
		if err := c.proc(name).stop(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range c.procs {
		p.kill()
	}
	// Shims, and anything else still serving the folder.
	for _, pid := range proctest.PIDsServing(c.Dir) {
		if err := proctest.KillAndWait(pid); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range sockets {
		if err := os.Remove(s); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := proctest.Unmount(c.Dir); err != nil {
		errs = append(errs, fmt.Errorf("the cluster's folder %s: %w", c.Dir, err))
	}
	if _, err := net.InterfaceByName(c.bridge); err == nil {
		if out, err := exec.Command("ip", "link", "delete", c.bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("ip link delete %s: %v: %s", c.bridge, err, out))
		}
	}
	errs = append(errs, removeCgroupRoot(c.cgroupRoot)...)
	if c.host != nil {
		errs = append(errs, c.host.restore()...)
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, fmt.Errorf("remove the cluster's folder: %w", err))
	}
	return errors.Join(errs...)
}

// shimSockets lists the sockets of the shims of the cluster's containerd:
// each task's bundle names its shim's address (the shims put their
// sockets under /run/containerd/s, whatever containerd's state).
func (c *Cluster) shimSockets() []string {
	files, _ := filepath.Glob(c.path("containerd", "state", "io.containerd.runtime.v2.task", "*", "*", "address"))
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		addr := strings.TrimSpace(string(b))
		if p, ok := strings.CutPrefix(addr, "unix://"); ok {
			out = append(out, p)
		}
	}
	return out
}

// killContainers kills the first process of every container runc knows
// of under the cluster's runc root: that ends its pid namespace.
func (c *Cluster) killContainers() []error {
	states, _ := filepath.Glob(c.path("runc", "*", "*", "state.json"))
	var errs []error
	for _, state := range states {
		if pid, _ := proctest.RuncInit(state); pid > 0 {
			if err := proctest.KillAndWait(pid); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}
