#!/usr/bin/env bash
# Tears down the test lab made by start.sh: kills only processes of THIS lab ($LAB's pid files, daemons and
# network namespaces that refer to $LAB), deletes its netns/veths/bridge and removes $LAB. Another lab's
# namespaces are left alone. Safe when nothing runs and after a crashed or kill -9'ed run. Run as root.
set -euo pipefail

LAB=${SLURMSWEEP_LAB:-/tmp/slurmsweep-lab}
# Network names are netns <prefix>-nX, bridge <prefix>br0, host veths <prefix>-nX. Without SLURMSWEEP_NET_PREFIX
# we use the prefix start.sh recorded in $LAB/env, else the default.
recorded_prefix() { sed -n 's/^export SLURMSWEEP_NET_PREFIX=\([A-Za-z0-9]*\)$/\1/p' "$LAB/env" 2>/dev/null || true; }
NET_PREFIX=${SLURMSWEEP_NET_PREFIX:-$(recorded_prefix)}
NET_PREFIX=${NET_PREFIX:-sslab}
BRIDGE=${NET_PREFIX}br0
MARKER=.slurmsweep-lab                      # start.sh puts this in $LAB; we only ever delete a marked dir
OUR_COMMANDS=" munged slurmctld slurmd slurmstepd sshd sshd-session slurmdbd mariadbd "  # sshd-session: OpenSSH 10 (chroot labs)

OUR_NETNS=()      # netns named like ours that run a process of this lab, or nothing at all (leftovers)
FOREIGN_NETNS=()  # netns named like ours that run processes of some other lab: never touched

log() { echo "stop: $*"; }

check_root() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "stop: must run as root" >&2
    exit 1
  fi
}

# Refuses to work on a LAB that could be somebody else's directory.
check_lab_path() {
  if [[ $LAB != /* || $LAB == / || $LAB =~ (^|/)\.\.(/|$) ]]; then
    echo "stop: SLURMSWEEP_LAB must be an absolute path other than / (got '$LAB')" >&2
    exit 1
  fi
  if [[ -d $LAB && ! -e $LAB/$MARKER && -n $(ls -A "$LAB") ]]; then
    echo "stop: $LAB is not empty and has no $MARKER file; refusing to touch it" >&2
    exit 1
  fi
}

# True when PID is alive and its command name is one of the daemons we start.
is_our_command() {
  local comm
  read -r comm 2>/dev/null <"/proc/$1/comm" || return 1
  [[ $OUR_COMMANDS == *" $comm "* ]]
}

# True when PID refers to $LAB: an argument is a path under $LAB (or option=path), its cwd is there, or it
# holds a file under $LAB open (this catches orphaned sshd sessions, which rewrite their command line, by
# their sshd.log, and slurmstepd by the slurmd log).
refers_to_lab() {
  local arg
  local -a args=()
  mapfile -d '' -t args 2>/dev/null <"/proc/$1/cmdline" || return 1
  for arg in "${args[@]}"; do
    # OpenSSH 10's listener shows one argument "sshd: /usr/sbin/sshd -f $LAB/ssh/sshd_config ... [listener]".
    [[ $arg == "$LAB/"* || $arg == *"=$LAB/"* || $arg == *" $LAB/"* ]] && return 0
  done
  find "/proc/$1/cwd" "/proc/$1/fd" -maxdepth 1 \( -lname "$LAB" -o -lname "$LAB/*" \) -print -quit 2>/dev/null |
    grep -q .
}

classify_netns() {
  local ns pid pids ours
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${NET_PREFIX}-n[0-9]+$" || true); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    ours=0
    [[ -z $pids ]] && ours=1
    for pid in $pids; do
      if refers_to_lab "$pid"; then
        ours=1
        break
      fi
    done
    if ((ours)); then
      OUR_NETNS+=("$ns")
    else
      FOREIGN_NETNS+=("$ns")
    fi
  done
  if ((${#FOREIGN_NETNS[@]})); then
    log "leaving alone netns ${FOREIGN_NETNS[*]}: their processes do not belong to $LAB"
  fi
}

# Every process (with its descendants) that belongs to the lab.
collect_pids() {
  local f pid ns
  {
    # 1. pid files written by munged, slurmctld, slurmd and sshd (checked against pid reuse)
    for f in "$LAB"/run/*.pid; do
      [[ -f $f ]] || continue
      pid=$(tr -dc 0-9 <"$f")
      [[ -n $pid ]] && is_our_command "$pid" && refers_to_lab "$pid" && echo "$pid"
    done
    # 2. everything inside our network namespaces (slurmd, slurmstepd, job processes)
    for ns in "${OUR_NETNS[@]}"; do
      ip netns pids "$ns" 2>/dev/null || true
    done
    # 3. daemons that refer to our lab dir (survives a lost pid file, finds orphaned sshd sessions)
    for f in /proc/[0-9]*; do
      pid=${f#/proc/}
      is_our_command "$pid" && refers_to_lab "$pid" && echo "$pid"
    done
  } | sort -un | add_descendants
}

# Reads pids on stdin, prints them plus all their descendants (e.g. sshd sessions, job steps).
add_descendants() {
  local -A keep=()
  local pid ppid line changed=1
  while read -r pid; do [[ -n $pid && $pid != "$$" ]] && keep[$pid]=1; done
  local -a table=()
  mapfile -t table < <(ps -e -o pid=,ppid=)
  while ((changed)); do
    changed=0
    for line in "${table[@]}"; do
      read -r pid ppid <<<"$line"
      if [[ -n ${keep[$ppid]:-} && -z ${keep[$pid]:-} ]]; then
        keep[$pid]=1
        changed=1
      fi
    done
  done
  for pid in "${!keep[@]}"; do echo "$pid"; done
}

kill_processes() {
  local -a pids
  mapfile -t pids < <(collect_pids)
  if ((${#pids[@]} == 0)); then
    log "no lab processes running"
    return
  fi
  log "killing ${#pids[@]} lab processes"
  kill -KILL "${pids[@]}" 2>/dev/null || true
  # Wait (at most 5 s) until every one is gone or a zombie.
  local pid
  local -a alive=()
  for _ in $(seq 50); do
    alive=()
    for pid in "${pids[@]}"; do
      if [[ -e /proc/$pid ]] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
        alive+=("$pid")
      fi
    done
    ((${#alive[@]} == 0)) && return 0
    sleep 0.1
  done
  log "warning: still alive after SIGKILL: ${alive[*]}"
}

is_foreign_netns() {
  local ns
  for ns in "${FOREIGN_NETNS[@]}"; do
    [[ $ns == "$1" ]] && return 0
  done
  return 1
}

delete_network() {
  local ns link
  # Delete host-side veths first: that removes both ends at once, so a following start.sh can reuse the names
  # without waiting for the kernel's asynchronous netns cleanup. A veth is named like its netns.
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1 |
      grep -E "^${NET_PREFIX}-n[0-9]+p?$" || true); do
    is_foreign_netns "${link%p}" || ip link del "$link" 2>/dev/null || true
  done
  for ns in "${OUR_NETNS[@]}"; do
    ip netns del "$ns"
  done
  if ((${#FOREIGN_NETNS[@]} == 0)) && ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link del "$BRIDGE"
  fi
  if ((${#FOREIGN_NETNS[@]})); then
    log "network removed (${#OUR_NETNS[@]} netns ${NET_PREFIX}-n*; bridge $BRIDGE kept, another lab uses it)"
  else
    log "network removed (${#OUR_NETNS[@]} netns ${NET_PREFIX}-n*, bridge $BRIDGE)"
  fi
}

remove_lab_dir() {
  if [[ -d $LAB ]]; then
    rm -rf -- "$LAB"
    log "removed $LAB"
  fi
}

main() {
  check_root
  check_lab_path
  # The TOTP and bastion sshds of tests/cluster/sites.sh, and its PAM service file.
  if [[ -d $LAB/sites ]]; then SLURMSWEEP_LAB=$LAB bash "$(dirname "${BASH_SOURCE[0]}")/sites.sh" stop || true; fi
  classify_netns
  kill_processes
  delete_network
  remove_lab_dir
}

main "$@"
