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

exec "$(dirname "$0")/apt-install.sh" setup-e2e $pkgs
