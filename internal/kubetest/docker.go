package kubetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	corev1 "k8s.io/api/core/v1"
)

// Docker is a Runtime that runs each container in a Docker container made
// from the Pod's spec as a container runtime would: the command, the
// environment, the working directory, the user and group, the read-only
// root, the dropped capabilities, no privilege escalation, the memory and
// CPU limits, no network (the NetworkPolicy's effect), an emptyDir of
// medium Memory as a tmpfs of its size limit, and any other emptyDir as a
// folder of this host (mode 0777, as a kubelet makes it) bind-mounted,
// read-only where the Pod says so; so it needs a local daemon. As in
// Kubernetes, the container has no init and its stdin is open once.
type Docker struct {
	Cli *client.Client

	mu      sync.Mutex
	volumes map[string]string // a Pod's emptyDirs' folder
}

// Start creates and starts c.
func (d *Docker) Start(ctx context.Context, pod *corev1.Pod, c corev1.Container) (Proc, error) {
	hc := &container.HostConfig{NetworkMode: "none", Tmpfs: map[string]string{}}
	for _, m := range c.VolumeMounts {
		var src *corev1.EmptyDirVolumeSource
		for _, v := range pod.Spec.Volumes {
			if v.Name == m.Name {
				src = v.EmptyDir
			}
		}
		switch {
		case src == nil:
			return nil, &Waiting{Reason: "CreateContainerConfigError", Message: "kubetest runs only emptyDir volumes: " + m.Name}
		case src.Medium == corev1.StorageMediumMemory:
			opt := "rw,nosuid,nodev,mode=1777"
			if src.SizeLimit != nil {
				opt += fmt.Sprintf(",size=%d", src.SizeLimit.Value())
			}
			hc.Tmpfs[m.MountPath] = opt
		default:
			dir, err := d.emptyDir(pod, m.Name)
			if err != nil {
				return nil, err
			}
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: dir, Target: m.MountPath, ReadOnly: m.ReadOnly})
		}
	}
	user := ""
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			user = fmt.Sprint(*sc.RunAsUser)
			if sc.RunAsGroup != nil {
				user += fmt.Sprintf(":%d", *sc.RunAsGroup)
			}
		}
		hc.ReadonlyRootfs = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
		if sc.Capabilities != nil {
			for _, cp := range sc.Capabilities.Drop {
				hc.CapDrop = append(hc.CapDrop, string(cp))
			}
		}
		if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
			hc.SecurityOpt = []string{"no-new-privileges"}
		}
	}
	if m, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		hc.Memory, hc.MemorySwap = m.Value(), m.Value()
	}
	if cpu, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		hc.NanoCPUs = cpu.MilliValue() * 1_000_000
	}
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	cfg := &container.Config{
		Image: c.Image, Entrypoint: append(c.Command, c.Args...), Cmd: []string{}, Env: env, User: user, WorkingDir: c.WorkingDir,
		Labels: pod.Labels, OpenStdin: c.Stdin, StdinOnce: c.StdinOnce, AttachStdin: c.Stdin, AttachStdout: true, AttachStderr: true,
		NetworkDisabled: true,
	}
	created, err := d.Cli.ContainerCreate(ctx, cfg, hc, nil, nil, "")
	if err != nil {
		if client.IsErrNotFound(err) {
			return nil, &Waiting{Reason: "ErrImagePull", Message: err.Error()}
		}
		return nil, err
	}
	p := &dockerProc{cli: d.Cli, id: created.ID}
	if err := d.Cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		p.Remove()
		return nil, err
	}
	return p, nil
}

// emptyDir is the folder of the Pod's emptyDir volume name, made at its
// first use.
func (d *Docker) emptyDir(pod *corev1.Pod, name string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.volumes == nil {
		d.volumes = map[string]string{}
	}
	root, ok := d.volumes[pod.Name]
	if !ok {
		var err error
		if root, err = os.MkdirTemp("", "kubetest-"+pod.Name+"-"); err != nil {
			return "", err
		}
		d.volumes[pod.Name] = root
	}
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o777); err != nil && !os.IsExist(err) {
		return "", err
	}
	return dir, os.Chmod(dir, 0o777) // whatever the umask
}

// End removes the Pod's emptyDirs.
func (d *Docker) End(pod *corev1.Pod) {
	d.mu.Lock()
	root, ok := d.volumes[pod.Name]
	delete(d.volumes, pod.Name)
	d.mu.Unlock()
	if !ok {
		return
	}
	// What the Pod wrote may be read-only: open it up first.
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(root)
}

type dockerProc struct {
	cli  *client.Client
	id   string
	once sync.Once
}

// Attach is docker attach: stdin is copied in and half-closed at its end,
// stdout and stderr demultiplexed out until the container's output ends.
func (p *dockerProc) Attach(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	hj, err := p.cli.ContainerAttach(ctx, p.id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		return err
	}
	defer hj.Close()
	go func() {
		_, _ = io.Copy(hj.Conn, stdin)
		_ = hj.CloseWrite()
	}()
	_, err = stdcopy.StdCopy(stdout, stderr, hj.Reader)
	if err != nil && (errors.Is(err, io.EOF) || strings.Contains(err.Error(), "use of closed")) {
		err = nil
	}
	return err
}

func (p *dockerProc) Wait() (int, string) {
	ctx := context.Background()
	waitC, errC := p.cli.ContainerWait(ctx, p.id, container.WaitConditionNotRunning)
	code := -1
	select {
	case r := <-waitC:
		code = int(r.StatusCode)
	case <-errC:
	}
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	if info, err := p.cli.ContainerInspect(ctx, p.id); err == nil && info.State != nil && info.State.OOMKilled {
		reason = "OOMKilled"
	}
	return code, reason
}

func (p *dockerProc) Remove() {
	p.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = p.cli.ContainerRemove(ctx, p.id, container.RemoveOptions{Force: true})
	})
}
