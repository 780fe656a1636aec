package clustertest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
)

// containerdConfig is the second containerd's configuration: its own
// root, state, socket and runc root under the cluster's folder, network
// namespaces under its state, no plugin that writes elsewhere (opt goes
// under the folder too), CRI on with the pause image and the bridge
// network, and restrict_oom_score_adj (the kubelet sets scores the
// containers may not lower).
func (c *Cluster) containerdConfig() string {
	q := strconv.Quote
	return `version = 2
root = ` + q(c.path("containerd", "root")) + `
state = ` + q(c.path("containerd", "state")) + `
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = ` + q(c.ContainerdSocket) + `

[ttrpc]
  address = ` + q(c.ContainerdSocket+".ttrpc") + `

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = ` + q(c.path("containerd", "opt")) + `

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ` + q(PauseImage) + `
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = ` + q(c.path("runc")) + `

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = ` + q(CNIBinDir) + `
  conf_dir = ` + q(c.path("cni", "net.d")) + `
  max_conf_num = 1
`
}

// cniConfig is the pods' network: a bridge of the cluster's own with no
// address on this host (no gateway), no masquerading, and addresses from
// host-local kept under the cluster's folder.
func (c *Cluster) cniConfig() ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       c.network,
		"plugins": []any{
			map[string]any{
				"type": "bridge", "bridge": c.bridge,
				"isGateway": false, "isDefaultGateway": false, "ipMasq": false,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": podSubnet}}},
					"dataDir": c.path("cni", "ipam"),
				},
			},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

func (c *Cluster) startContainerd() error {
	conf, err := c.cniConfig()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.path("cni", "net.d"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(c.path("cni", "net.d", "10-"+c.network+".conflist"), conf, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(c.path("containerd.toml"), []byte(c.containerdConfig()), 0o644); err != nil {
		return err
	}
	return c.run("containerd", true, "containerd", "--config="+c.path("containerd.toml"))
}

// ctr runs ctr against the cluster's containerd, in CRI's namespace.
func (c *Cluster) ctr(args ...string) *exec.Cmd {
	return exec.Command("ctr", append([]string{"--address=" + c.ContainerdSocket, "--namespace=k8s.io"}, args...)...)
}

// importPause makes the pause image (an OCI archive of one layer: the
// static pause binary built with the others) and imports it.
func (c *Cluster) importPause() error {
	bin, err := os.ReadFile(filepath.Join(c.bin, "pause"))
	if err != nil {
		return err
	}
	archive, err := pauseArchive(bin)
	if err != nil {
		return fmt.Errorf("make the pause image: %w", err)
	}
	cmd := c.ctr("images", "import", "-")
	cmd.Stdin = bytes.NewReader(archive)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("import the pause image: %v: %s", err, out)
	}
	return nil
}

// importDocker copies ref from this machine's Docker into the cluster's
// containerd: docker save, piped into ctr import.
func (c *Cluster) importDocker(ref string) error {
	save := exec.Command("docker", "save", ref)
	var saveErr bytes.Buffer
	save.Stderr = &saveErr
	out, err := save.StdoutPipe()
	if err != nil {
		return err
	}
	imp := c.ctr("images", "import", "-")
	imp.Stdin = out
	var impOut bytes.Buffer
	imp.Stdout, imp.Stderr = &impOut, &impOut
	if err := save.Start(); err != nil {
		return fmt.Errorf("docker save %s: %w", ref, err)
	}
	if err := imp.Start(); err != nil {
		_ = save.Process.Kill()
		_ = save.Wait()
		return fmt.Errorf("ctr import: %w", err)
	}
	impErr := imp.Wait()
	if impErr != nil {
		_ = save.Process.Kill()
	}
	saveWaitErr := save.Wait()
	switch {
	case impErr != nil && strings.TrimSpace(saveErr.String()) != "":
		// A save that failed ends the import's input early: both say why.
		return fmt.Errorf("docker save %s: %s; import into the cluster's containerd: %v: %s", ref, bytes.TrimSpace(saveErr.Bytes()), impErr, impOut.Bytes())
	case impErr != nil:
		return fmt.Errorf("import %s into the cluster's containerd: %v: %s", ref, impErr, impOut.Bytes())
	case saveWaitErr != nil:
		return fmt.Errorf("docker save %s: %v: %s", ref, saveWaitErr, saveErr.Bytes())
	}
	return nil
}

// pauseArchive is an OCI image layout, as a tar stream, of one image
// named PauseImage whose one layer holds /pause, run as 65535.
func pauseArchive(pause []byte) ([]byte, error) {
	type descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int               `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	blobs := map[string][]byte{}
	add := func(mediaType string, b []byte) descriptor {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs[d] = b
		return descriptor{MediaType: mediaType, Digest: d, Size: len(b)}
	}

	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(pause)), Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(pause); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerDesc := add("application/vnd.oci.image.layer.v1.tar", layer.Bytes())
	config, err := json.Marshal(map[string]any{
		"architecture": goruntime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": []string{"/pause"}, "User": "65535:65535"},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDesc.Digest}},
	})
	if err != nil {
		return nil, err
	}
	configDesc := add("application/vnd.oci.image.config.v1+json", config)
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        configDesc,
		"layers":        []descriptor{layerDesc},
	})
	if err != nil {
		return nil, err
	}
	manifestDesc := add("application/vnd.oci.image.manifest.v1+json", manifest)
	manifestDesc.Annotations = map[string]string{
		"io.containerd.image.name":          PauseImage,
		"org.opencontainers.image.ref.name": PauseImage[strings.LastIndex(PauseImage, ":")+1:],
	}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []descriptor{manifestDesc}})
	if err != nil {
		return nil, err
	}

	var out bytes.Buffer
	w := tar.NewWriter(&out)
	file := func(name string, b []byte) error {
		if err := w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := io.Copy(w, bytes.NewReader(b))
		return err
	}
	if err := file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return nil, err
	}
	if err := file("index.json", index); err != nil {
		return nil, err
	}
	for d, b := range blobs {
		if err := file("blobs/sha256/"+strings.TrimPrefix(d, "sha256:"), b); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
