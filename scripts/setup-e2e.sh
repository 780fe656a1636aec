#!/usr/bin/env bash
# Installs what the end-to-end tests on a real Kubernetes cluster
# (internal/clustertest, `make e2e`) need on a Debian host, beside what
# setup-host.sh installs: etcd, containerd and runc, the CNI plugins, and gcc
# with the static C library (for the pause binary). Does nothing when they
# are present. In CI (CI set) a missing package that cannot be installed is
# an error.
set -euo pipefail

pkgs=""
command -v etcd >/dev/null 2>&1 || pkgs="$pkgs etcd-server"
command -v containerd >/dev/null 2>&1 && command -v ctr >/dev/null 2>&1 || pkgs="$pkgs containerd"
command -v runc >/dev/null 2>&1 || pkgs="$pkgs runc"
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || pkgs="$pkgs containernetworking-plugins"
command -v gcc >/dev/null 2>&1 || pkgs="$pkgs gcc"
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ -n "$(find /usr/lib -name libc.a -print -quit 2>/dev/null)" ] || pkgs="$pkgs libc6-dev"
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || pkgs="$pkgs iproute2"
[ -n "$pkgs" ] || exit 0

sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; fi
fi
if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = 0 ] || [ -n "$sudo" ]; }; then
  echo "setup-e2e: installing$pkgs (apt-get)" >&2
  $sudo apt-get update -qq
  # The tests start etcd and containerd of their own, on folders and ports
  # of their own, whatever the packages' services do.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
  exit 0
fi
msg="setup-e2e: missing packages; install them (Debian: apt-get install$pkgs)"
if [ -n "${CI:-}" ]; then
  echo "$msg" >&2
  exit 1
fi
echo "$msg; the cluster tests will be skipped" >&2
