#!/usr/bin/env bash
# Installs what ctxcode's kernels and tests need on a Debian host: Python 3
# with IPython and pandas, nbformat for Debian's python3 (the notebook tests
# validate exported notebooks with it), debootstrap where Docker is (to
# build the kernel image), and Chromium (the report's browser test opens
# report.html in it, headless), and OpenSSH's server and client (the tests
# of Docker over ssh). Does nothing when they are present.
# In CI (CI set) a missing package that cannot be installed is an error.
set -euo pipefail

have() { "$1" -c 'import IPython, pandas' >/dev/null 2>&1; }
pkgs=""
found=""
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && have "$py"; then
    found=1
  fi
done
[ -n "$found" ] || pkgs="python3 python3-ipython python3-pandas"
# The notebook tests run nbformat's validator with /usr/bin/python3 first.
if ! /usr/bin/python3 -c 'import nbformat' >/dev/null 2>&1; then
  pkgs="$pkgs python3-nbformat"
fi
# With Docker present, the kernel image is built offline with debootstrap.
if command -v docker >/dev/null 2>&1 && ! command -v debootstrap >/dev/null 2>&1; then
  pkgs="$pkgs debootstrap"
fi
# The report's browser test drives a headless Chromium (chromedp).
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  pkgs="$pkgs chromium"
fi
# The tests of Docker over ssh run a throwaway sshd on 127.0.0.1
# (internal/sshtest) and reach it with ssh.
if [ ! -x /usr/sbin/sshd ]; then
  pkgs="$pkgs openssh-server"
fi
if ! command -v ssh >/dev/null 2>&1; then
  pkgs="$pkgs openssh-client"
fi
# The tests of a second daemon in a network namespace (internal/dockertest)
# make it with ip (iproute2) and enter it with nsenter (util-linux).
if ! command -v ip >/dev/null 2>&1 && [ ! -x /usr/sbin/ip ] && [ ! -x /sbin/ip ]; then
  pkgs="$pkgs iproute2"
fi
[ -n "$pkgs" ] || exit 0

exec "$(dirname "$0")/apt-install.sh" setup $pkgs
