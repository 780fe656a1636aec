#!/usr/bin/env bash
# apt-install.sh WHO PACKAGE...: installs Debian packages for a setup script
# (WHO names it in what it prints), with sudo when not root. Where it cannot
# install them it says which are missing: an error in CI (CI set), else a
# note that the tests that need them will be skipped.
set -euo pipefail
who=$1
shift
pkgs="$*"

sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; fi
fi
if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = 0 ] || [ -n "$sudo" ]; }; then
  echo "$who: installing $pkgs (apt-get)" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
  exit 0
fi
msg="$who: missing packages; install them (Debian: apt-get install $pkgs)"
if [ -n "${CI:-}" ]; then
  echo "$msg" >&2
  exit 1
fi
echo "$msg; the tests that need them will be skipped" >&2
