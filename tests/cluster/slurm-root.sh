#!/usr/bin/env bash
# Builds once, then prints, the root file system of a newer Slurm for tests/cluster/start.sh's chroot labs:
# `slurm-root.sh 24.11` (Debian trixie) or `slurm-root.sh 26.05` (Debian sid); `slurm-root.sh VERSION accounting`
# adds slurmdbd and MariaDB (~590 MB instead of ~200 MB). Run as root; needs mmdebstrap (scripts/setup.sh).
# Roots live in $SLURMSWEEP_ROOT_CACHE (default /var/cache/slurmsweep/roots), outside any clone, so a rerun
# takes no time; a root whose recipe changed, or that a crash left half-built, is built again.
set -Eeuo pipefail

CACHE=${SLURMSWEEP_ROOT_CACHE:-/var/cache/slurmsweep/roots}
MIRROR=${SLURMSWEEP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Bump when what goes into a root changes: cached roots of an older recipe are rebuilt.
RECIPE=1

log() { echo "slurm-root: $*" >&2; }
fail() {
  log "$*"
  exit 1
}

usage() { fail "usage: slurm-root.sh 24.11|26.05 [accounting]"; }

main() {
  [[ $# -ge 1 && $# -le 2 ]] || usage
  local version=$1 flavour=${2:-base} suite
  case $version in
    24.11) suite=trixie ;;
    26.05) suite=sid ;;
    *) fail "no root for Slurm '$version' (known: 24.11, 26.05; 22.05 is this machine's own)" ;;
  esac
  [[ $flavour == base || $flavour == accounting ]] || usage
  [[ $(id -u) -eq 0 ]] || fail "must run as root"
  command -v mmdebstrap >/dev/null || fail "mmdebstrap not found (run scripts/setup.sh)"

  # What the lab runs in the root: slurmctld, slurmd, the clients and sshd (munged is the machine's own; the
  # protocol on its socket is the same). Jobs run there too: bash and coreutils come with minbase.
  local packages=slurmctld,slurmd,slurm-client,openssh-server,procps
  [[ $flavour == accounting ]] && packages+=,slurmdbd,mariadb-server
  local name=slurm-$version
  [[ $flavour == accounting ]] && name+=-accounting
  local root=$CACHE/$name stamp="recipe=$RECIPE suite=$suite packages=$packages"

  mkdir -p "$CACHE"
  # One builder per root; a second caller waits and then finds it built.
  exec 9>"$CACHE/.$name.lock"
  flock 9
  if [[ -f $root/.slurmsweep-root && $(head -1 "$root/.slurmsweep-root") == "$stamp" ]]; then
    echo "$root"
    return
  fi
  log "building $root (Debian $suite: $packages); ~3 min on a fresh machine"
  local start=$SECONDS
  rm -rf -- "$root" "$root.new"
  # sid's Release files may be past their Valid-Until on a mirror snapshot.
  mmdebstrap --variant=minbase --include="$packages" --aptopt='Acquire::Check-Valid-Until "false"' \
    --dpkgopt='path-exclude=/usr/share/{doc,man,locale}/*' "$suite" "$root.new" "$MIRROR" >&2
  # The daemons of 24.11+ refuse to start without these; sshd wants its privilege-separation directory.
  mkdir -p "$root.new/run/sshd" "$root.new/var/spool/slurmd" "$root.new/var/lib/slurm"
  local got
  got=$(chroot "$root.new" slurmctld -V)
  [[ $got == "slurm-wlm $version."* || $got == "slurm $version."* ]] || fail "$suite has '$got', not Slurm $version"
  { echo "$stamp"; echo "$got"; } >"$root.new/.slurmsweep-root"
  mv "$root.new" "$root"
  log "built $root ($got) in $((SECONDS - start)) s, $(du -sh "$root" | cut -f1)"
  echo "$root"
}

main "$@"
