#!/usr/bin/env bash
# Builds the Kubernetes components the e2e tests run (internal/clustertest):
# kube-apiserver, kube-controller-manager, kube-scheduler and kubelet from the
# k8s.io/kubernetes module this folder's go.mod requires, and the pause
# binary from the module's build/pause/linux/pause.c (static, with gcc),
# into ${XDG_CACHE_HOME:-~/.cache}/ctxcode/k8s/VERSION/bin.
#
# Idempotent: a folder built from the same go.mod, go.sum, Go and this script
# is kept as it is (a stamp file says what built it). Prints the time taken.
# Offline but for the Go module proxy, which serves the modules.
set -euo pipefail
cd "$(dirname "$0")"
GO=${GO:-go}
start=$(date +%s%N)
elapsed() { local t=$((($(date +%s%N) - start) / 100000000)); echo "$((t / 10)).$((t % 10))s"; }

version=$("$GO" list -m -f '{{.Version}}' k8s.io/kubernetes)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/ctxcode/k8s/$version
bin=$cache/bin
stamp=$(cat go.mod go.sum build.sh | sha256sum | cut -c1-16)-$("$GO" env GOVERSION)
binaries="kube-apiserver kube-controller-manager kube-scheduler kubelet pause"

current=1
for b in $binaries; do [ -x "$bin/$b" ] || current=""; done
if [ -n "$current" ] && [ "$(cat "$bin/.stamp" 2>/dev/null)" = "$stamp" ]; then
  echo "k8s $version: $bin is current ($(elapsed))"
  exit 0
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/bin.new.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "k8s $version: building $binaries into $bin" >&2
minor=${version#v*.}; minor=${minor%%.*}
major=${version#v}; major=${major%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$version"
ldflags="$ldflags -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor"
ldflags="$ldflags -X k8s.io/component-base/version.gitTreeState=clean"
CGO_ENABLED=0 "$GO" build -trimpath -ldflags "$ldflags" -o "$tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kubelet
src=$("$GO" list -m -f '{{.Dir}}' k8s.io/kubernetes)
gcc -Os -Wall -Werror -static -DVERSION="$version" -o "$tmp/pause" "$src/build/pause/linux/pause.c"
echo "$stamp" > "$tmp/.stamp"
rm -rf "$bin"
mv "$tmp" "$bin"
trap - EXIT
echo "k8s $version: built $binaries into $bin ($(elapsed))"
