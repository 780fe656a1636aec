package clustertest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
)

// kubeletTools are the programs the kubelet may run (mounting volumes);
// its PATH has these and no other. Without iptables on its PATH it leaves
// this machine's firewall alone: it would add a KUBE-FIREWALL chain to
// INPUT and OUTPUT and canary chains for a kube-proxy that does not run
// here.
var kubeletTools = []string{"mount", "umount", "nsenter", "findmnt", "losetup", "blkid", "du", "find", "nice", "ionice"}

// kubeletPath makes the folder of the kubelet's PATH: links to
// kubeletTools, those this machine has.
func (c *Cluster) kubeletPath() (string, error) {
	dir := c.path("kubelet-path")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	for _, t := range kubeletTools {
		if p, err := exec.LookPath(t); err == nil {
			if err := os.Symlink(p, filepath.Join(dir, t)); err != nil {
				return "", err
			}
		}
	}
	return dir, nil
}

// kubeletConfig is the kubelet's KubeletConfiguration: serving on
// 127.0.0.1 only (no read-only port, no healthz port), trusting the
// cluster's CA, cgroupfs on cgroup v1 (failCgroupV1 off) under a cgroup
// root of the cluster's own, swap allowed, its files under the cluster's
// folder, and evictions only when the disk or memory is nearly gone (a
// test machine's disk is what it is).
func (c *Cluster) kubeletConfig(port int) ([]byte, error) {
	conf := map[string]any{
		"apiVersion":         "kubelet.config.k8s.io/v1beta1",
		"kind":               "KubeletConfiguration",
		"address":            "127.0.0.1",
		"port":               port,
		"readOnlyPort":       0,
		"healthzPort":        0,
		"healthzBindAddress": "127.0.0.1",
		"tlsCertFile":        c.pki.path("kubelet-serving.crt"),
		"tlsPrivateKeyFile":  c.pki.path("kubelet-serving.key"),
		"authentication": map[string]any{
			"anonymous": map[string]any{"enabled": false},
			"webhook":   map[string]any{"enabled": false},
			"x509":      map[string]any{"clientCAFile": c.pki.path("ca.crt")},
		},
		// Only holders of a certificate of the cluster's CA get here.
		"authorization":            map[string]any{"mode": "AlwaysAllow"},
		"cgroupDriver":             "cgroupfs",
		"cgroupRoot":               c.cgroupRoot,
		"failCgroupV1":             false,
		"failSwapOn":               false,
		"containerRuntimeEndpoint": "unix://" + c.ContainerdSocket,
		"podLogsDir":               c.path("pod-logs"),
		"volumePluginDir":          c.path("volume-plugins"),
		"resolvConf":               "",
		"serializeImagePulls":      true,
		"evictionHard": map[string]string{
			"memory.available":  "100Mi",
			"nodefs.available":  "1%",
			"nodefs.inodesFree": "1%",
			"imagefs.available": "1%",
		},
		"imageGCHighThresholdPercent": 100,
		"imageGCLowThresholdPercent":  99,
	}
	return json.MarshalIndent(conf, "", "  ")
}

func (c *Cluster) startKubelet(port int) error {
	conf, err := c.kubeletConfig(port)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.path("kubelet.json"), conf, 0o644); err != nil {
		return err
	}
	if err := c.pki.kubeconfig(c.path("kubelet.kubeconfig"), "kubelet", c.Server, ""); err != nil {
		return err
	}
	if err := makeCgroupRoot(c.cgroupRoot); err != nil {
		return err
	}
	path, err := c.kubeletPath()
	if err != nil {
		return err
	}
	return c.runEnv("kubelet", true, []string{"PATH=" + path}, filepath.Join(c.bin, "kubelet"),
		"--config="+c.path("kubelet.json"),
		"--kubeconfig="+c.path("kubelet.kubeconfig"),
		"--root-dir="+c.path("kubelet"),
		"--cert-dir="+c.path("kubelet", "pki"),
		"--hostname-override="+NodeName,
		"--v=2")
}
