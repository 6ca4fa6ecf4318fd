#!/usr/bin/env bash
# Installs Debian packages (the arguments) without starting their services: as root, or through sudo.
# Package lists may be stale or missing on a fresh machine: they are updated only when the install cannot do without.
set -euo pipefail

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else echo "apt-install.sh: installing $* needs root (or sudo)" >&2; exit 1; fi
}

# Keep the packages' init scripts from starting services with their stock configuration.
policy=/usr/sbin/policy-rc.d own_policy=""
if [ ! -e "$policy" ]; then
  as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod +x $policy" && own_policy=1
fi
install=(env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@")
status=0
as_root "${install[@]}" || { as_root apt-get update -q && as_root "${install[@]}"; } || status=$?
[ -z "$own_policy" ] || as_root rm -f "$policy"
exit "$status"
