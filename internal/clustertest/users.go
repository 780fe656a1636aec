package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// UserKubeconfig writes a kubeconfig of a user named user, in no group,
// whose context's namespace is the test's, and returns its path. The
// cluster authenticates the user (a client certificate of its CA) and
// RBAC grants it nothing until Grant binds it a Role.
func (c *Cluster) UserKubeconfig(tb testing.TB, user string) string {
	tb.Helper()
	name := "user-" + user
	if err := c.pki.issue(identity{name: name, cn: user}); err != nil {
		tb.Fatalf("issue a certificate for %s: %v", user, err)
	}
	path := c.path(name + ".kubeconfig")
	if err := c.pki.kubeconfig(path, name, c.Server, c.Namespace); err != nil {
		tb.Fatalf("write a kubeconfig for %s: %v", user, err)
	}
	return path
}

// Grant makes role, a Role manifest as JSON (its namespace is set to the
// test's), and a RoleBinding of it to user, as the administrator.
func (c *Cluster) Grant(tb testing.TB, user string, role []byte) {
	tb.Helper()
	var r map[string]any
	if err := json.Unmarshal(role, &r); err != nil {
		tb.Fatalf("the Role is not JSON: %v", err)
	}
	meta, _ := r["metadata"].(map[string]any)
	if meta == nil || meta["name"] == nil || r["kind"] != "Role" {
		tb.Fatalf("not a Role with a name: %s", role)
	}
	meta["namespace"] = c.Namespace
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a hang guard
	defer cancel()
	rbac := "/apis/rbac.authorization.k8s.io/v1/namespaces/" + c.Namespace
	if _, err := c.API.Do(ctx, http.MethodPost, rbac+"/roles", r); err != nil {
		tb.Fatalf("make the Role: %v", err)
	}
	binding := map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": fmt.Sprintf("%s-%s", meta["name"], user), "namespace": c.Namespace},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": meta["name"]},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}},
	}
	if _, err := c.API.Do(ctx, http.MethodPost, rbac+"/rolebindings", binding); err != nil {
		tb.Fatalf("bind the Role to %s: %v", user, err)
	}
}

// EmptyDir is the folder, on this machine, of the emptyDir volume of the
// Pod whose uid is uid: what its containers see at the volume's mount.
func (c *Cluster) EmptyDir(uid, volume string) string {
	return filepath.Join(c.path("kubelet"), "pods", uid, "volumes", "kubernetes.io~empty-dir", volume)
}
