#!/usr/bin/env bash
# Install Debian packages (apt-get, through sudo when not root), one apt at a time: the
# set-up steps of scripts/test.sh run side by side and two apt-gets would clash on dpkg's
# lock. Used for what the scripts install when it is missing (Java, Maven, Chromium,
# PostgreSQL).
#
#   scripts/apt-install.sh PACKAGE...
set -euo pipefail
[ $# -gt 0 ] || { echo "apt-install.sh: name the packages to install" >&2; exit 2; }
command -v apt-get >/dev/null 2>&1 || { echo "apt-install.sh: no apt-get to install $* with" >&2; exit 1; }
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
exec 9>"${TMPDIR:-/tmp}/headwater-apt.lock"
flock 9
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
