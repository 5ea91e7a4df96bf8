#!/usr/bin/env bash
# Starts a private test lab on this machine: munge, slurmctld, N slurmd nodes (one network namespace each,
# 8 fake GPUs per node) and an sshd on 127.0.0.1 whose sessions see the lab's SLURM_CONF.
# Run as root. Always starts from scratch (runs stop.sh first). Writes $LAB/env for tests to source.
# SLURMSWEEP_PROFILE=lab (default) is friendly to tests; =production keeps the defaults real clusters keep:
# jobs requeued on node failure, finished jobs purged after a few seconds, preemption by a high-priority partition.
# SLURMSWEEP_SLURM=22.05 (default) runs this machine's Slurm; 24.11 and 26.05 run Debian's builds in a root file
# system (tests/cluster/slurm-root.sh, built once and cached) whose /usr and /etc stand in for this machine's.
set -Eeuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

LAB=${SLURMSWEEP_LAB:-/tmp/slurmsweep-lab}
NODES=${SLURMSWEEP_NODES:-2}
CTLD_PORT=${SLURMSWEEP_SLURMCTLD_PORT:-16817}
SLURMD_PORT=${SLURMSWEEP_SLURMD_PORT:-16818}
SSH_PORT=${SLURMSWEEP_SSH_PORT:-22022}
NET_PREFIX=${SLURMSWEEP_NET_PREFIX:-sslab}  # netns <prefix>-nX, bridge <prefix>br0, host veths <prefix>-nX
SUBNET=${SLURMSWEEP_SUBNET:-10.213.77}      # first three octets of a /24 used only inside this machine
READY_TIMEOUT=${SLURMSWEEP_READY_TIMEOUT:-30}
PROFILE=${SLURMSWEEP_PROFILE:-lab}
ACCOUNTING=${SLURMSWEEP_ACCOUNTING:-none}  # none, or slurmdbd (with a private MariaDB)
DBD_PORT=${SLURMSWEEP_SLURMDBD_PORT:-16819}
DB_PORT=${SLURMSWEEP_MARIADB_PORT:-16820}
MAX_ARRAY_SIZE=${SLURMSWEEP_MAX_ARRAY_SIZE:-}  # empty: Slurm's default (1001)
MAX_JOB_COUNT=${SLURMSWEEP_MAX_JOB_COUNT:-50000}
SLURM_VERSION=${SLURMSWEEP_SLURM:-22.05}  # 22.05 (this machine's), 24.11 or 26.05 (in a root of their own)

BRIDGE=${NET_PREFIX}br0
CTLD_NAME=sslabctl
CTLD_ADDR=$SUBNET.1
PARTITION=debug
URGENT_PARTITION=urgent  # production profile: its jobs preempt (requeue) those of $PARTITION
CONF=$LAB/etc/slurm.conf
MUNGE_SOCKET=$LAB/munge/munge.sock
START_TIME=$(date +%s.%N)
ROOT=""  # the Slurm root file system of a chroot lab; empty for this machine's Slurm
SSHD=/usr/sbin/sshd

elapsed() { awk -v s="$START_TIME" -v e="$(date +%s.%N)" 'BEGIN{printf "%.1f", e - s}'; }
log() { echo "start: [$(elapsed)s] $*"; }

node_name() { echo "n$1"; }
node_addr() { echo "$SUBNET.$((10 + $1))"; }
node_netns() { echo "${NET_PREFIX}-n$1"; }

# On any failure: say where, show the logs, leave the lab as it is for inspection (stop.sh cleans it).
on_error() {
  local rc=$? line=$1
  echo "start: FAILED (exit $rc at line $line)" >&2
  local f
  for f in "$LAB"/log/*.log; do
    [[ -s $f ]] || continue
    echo "----- tail $f" >&2
    tail -n 15 "$f" >&2
  done
  echo "start: run $HERE/stop.sh to clean up" >&2
  exit "$rc"
}

fail() {
  echo "start: $*" >&2
  return 1
}

check_prerequisites() {
  [[ $(id -u) -eq 0 ]] || fail "must run as root"
  [[ $PROFILE == lab || $PROFILE == production ]] || fail "SLURMSWEEP_PROFILE must be lab or production (got '$PROFILE')"
  [[ $ACCOUNTING == none || $ACCOUNTING == slurmdbd ]] || fail "SLURMSWEEP_ACCOUNTING must be none or slurmdbd (got '$ACCOUNTING')"
  case $SLURM_VERSION in
    22.05)
      local host_version
      host_version=$(slurmctld -V 2>/dev/null || true)
      [[ $host_version == "slurm-wlm 22.05."* || $host_version == "slurm 22.05."* ]] ||
        fail "this machine's slurmctld is '$host_version', not 22.05 (run scripts/setup.sh)" ;;
    24.11 | 26.05) ;;
    *) fail "SLURMSWEEP_SLURM must be 22.05, 24.11 or 26.05 (got '$SLURM_VERSION')" ;;
  esac
  if [[ $ACCOUNTING == slurmdbd && $SLURM_VERSION == 22.05 ]]; then
    for tool in slurmdbd sacctmgr mariadbd mariadb-install-db mariadb mariadb-admin; do
      command -v "$tool" >/dev/null || fail "$tool not found (run scripts/setup.sh)"
    done
  fi
  [[ $NODES =~ ^[1-9][0-9]?$ ]] || fail "SLURMSWEEP_NODES must be 1..99 (got '$NODES')"
  [[ $NET_PREFIX =~ ^[a-z0-9]{1,8}$ ]] || fail "SLURMSWEEP_NET_PREFIX must be 1-8 of [a-z0-9] (got '$NET_PREFIX')"
  [[ $SUBNET =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || fail "SLURMSWEEP_SUBNET must look like 10.213.77"
  local tool
  for tool in munged mungekey munge unmunge slurmctld slurmd sinfo sbatch /usr/sbin/sshd ssh ssh-keygen \
      ip nsenter unshare mknod; do
    command -v "$tool" >/dev/null || fail "$tool not found (run scripts/setup.sh)"
  done
}

clean_previous_run() {
  SLURMSWEEP_LAB=$LAB SLURMSWEEP_NET_PREFIX=$NET_PREFIX "$HERE/stop.sh" | sed 's/^/start: /'
  if ip netns list | grep -qE "^${NET_PREFIX}-n[0-9]+( |$)" || ip link show "$BRIDGE" >/dev/null 2>&1; then
    fail "network prefix $NET_PREFIX is used by another lab; set SLURMSWEEP_NET_PREFIX (and SLURMSWEEP_SUBNET)"
  fi
  if ip -o addr show | grep -qF " $SUBNET."; then
    fail "subnet $SUBNET.0/24 is already used on this machine; set SLURMSWEEP_SUBNET"
  fi
  local port
  local ports=("$CTLD_PORT" "$SSH_PORT")
  [[ $ACCOUNTING == slurmdbd ]] && ports+=("$DBD_PORT" "$DB_PORT")
  for port in "${ports[@]}"; do
    if ss -Hltn "sport = :$port" | grep -q .; then
      fail "TCP port $port is already in use; set SLURMSWEEP_SLURMCTLD_PORT / SLURMSWEEP_SSH_PORT"
    fi
  done
}

make_dirs() {
  local i
  mkdir -p "$LAB"
  touch "$LAB/.slurmsweep-lab"
  mkdir -p "$LAB"/{etc,log,run,state,munge,ssh,dev}
  for i in $(seq "$NODES"); do
    mkdir -p "$LAB/spool/$(node_name "$i")" "$LAB/dev/$(node_name "$i")"
  done
  chmod 755 "$LAB" "$LAB/munge"  # clients need to reach the munge socket
  log "lab dir $LAB"
}

# Labs of 24.11 and 26.05: the Slurm root, and $LAB/bin/in-root, which runs a command with the root's /usr and
# /etc in place of this machine's (both systems keep everything in /usr: /bin, /lib are links into it), in a mount
# namespace of its own, with the lab's hosts file as /etc/hosts. All else (/tmp, the clone, /proc, /dev) is this
# machine's, at the same paths, so tests and jobs see the same files inside and out. Every Slurm command, the
# daemons and sshd get a wrapper in $LAB/bin that goes through it; start.sh and the env file put $LAB/bin first
# in PATH. Daemons keep their namespace (and the mounts in it) while they live; nothing shows outside it.
prepare_root() {
  [[ $SLURM_VERSION == 22.05 ]] && return 0
  local flavour=base
  [[ $ACCOUNTING == slurmdbd ]] && flavour=accounting
  ROOT=$("$HERE/slurm-root.sh" "$SLURM_VERSION" "$flavour")
  [[ -n $ROOT && -x $ROOT/usr/sbin/slurmctld ]] || fail "no Slurm root for $SLURM_VERSION"
  [[ -L /lib && -L /bin ]] || fail "this machine keeps /bin and /lib outside /usr: the $SLURM_VERSION lab cannot run"
  [[ -f $ROOT/etc/hosts ]] || touch "$ROOT/etc/hosts"
  local bin=$LAB/bin
  mkdir -p "$bin"
  cat >"$bin/in-root" <<EOF_IN_ROOT
#!/bin/sh
# Generated by tests/cluster/start.sh: runs a command with the Slurm $SLURM_VERSION root's /usr and /etc (see start.sh).
exec unshare --mount --propagation private /bin/sh -c '
mount --bind "$ROOT/etc" /etc && mount --bind "$LAB/etc/hosts" /etc/hosts && mount --bind "$ROOT/usr" /usr &&
  exec "\$@"' in-root "\$@"
EOF_IN_ROOT
  chmod 755 "$bin/in-root"
  local name path count=0
  for name in sbatch squeue scancel sacct scontrol sinfo srun salloc sattach sacctmgr sprio sshare sstat sreport \
      strigger sdiag scrontab slurmctld slurmd slurmdbd sshd mariadbd mariadb-install-db mariadb mariadb-admin; do
    for path in /usr/bin/$name /usr/sbin/$name; do
      [[ -x $ROOT$path ]] || continue
      printf '#!/bin/sh\nexec %q %q "$@"\n' "$bin/in-root" "$path" >"$bin/$name"
      chmod 755 "$bin/$name"
      count=$((count + 1))
      break
    done
  done
  export PATH=$bin:$PATH
  SSHD=$bin/sshd
  log "Slurm $SLURM_VERSION root $ROOT ($(sed -n 2p "$ROOT/.slurmsweep-root")); $count commands in $bin"
}

# $LAB/bin/start-slurmctld and start-sshd start those daemons of this lab; the outage tests restart them so.
write_start_scripts() {
  mkdir -p "$LAB/bin"
  # slurmctld only runs if SlurmctldHost's name equals its hostname, so it gets a private UTS namespace named
  # $CTLD_NAME; it stays in the root network namespace and the address comes from SlurmctldHost=name(addr).
  cat >"$LAB/bin/start-slurmctld" <<EOF_CTLD
#!/bin/sh
# Generated by tests/cluster/start.sh: starts this lab's slurmctld (Slurm $SLURM_VERSION).
PATH=$(printf %q "$PATH")
SLURM_CONF=$(printf %q "$CONF")
export PATH SLURM_CONF
exec unshare --uts sh -c "hostname $CTLD_NAME && exec slurmctld -f '$CONF'"
EOF_CTLD
  cat >"$LAB/bin/start-sshd" <<EOF_SSHD
#!/bin/sh
# Generated by tests/cluster/start.sh: starts this lab's sshd.
exec $(printf %q "$SSHD") -f $(printf %q "$LAB/ssh/sshd_config") -E $(printf %q "$LAB/log/sshd.log")
EOF_SSHD
  chmod 755 "$LAB/bin/start-slurmctld" "$LAB/bin/start-sshd"
}

start_munge() {
  mungekey -c -k "$LAB/munge/munge.key" -b 1024
  munged --socket="$MUNGE_SOCKET" --key-file="$LAB/munge/munge.key" --log-file="$LAB/log/munged.log" \
    --pid-file="$LAB/run/munged.pid" --seed-file="$LAB/munge/munge.seed"
  munge -S "$MUNGE_SOCKET" -n | unmunge -S "$MUNGE_SOCKET" >/dev/null
  log "munged up (socket $MUNGE_SOCKET)"
}

# Bridge in the root namespace with .1; node i lives in netns <prefix>-n<i> with address .(10+i) on eth0.
make_network() {
  ip link add "$BRIDGE" type bridge
  ip addr add "$CTLD_ADDR/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  local i ns host_if
  for i in $(seq "$NODES"); do
    ns=$(node_netns "$i")
    host_if=$ns
    ip netns add "$ns"
    ip link add "$host_if" type veth peer name "${host_if}p"
    ip link set "${host_if}p" netns "$ns"
    ip link set "$host_if" master "$BRIDGE" up
    ip -n "$ns" link set "${host_if}p" name eth0
    ip -n "$ns" addr add "$(node_addr "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
  done
  log "network $SUBNET.0/24 on bridge $BRIDGE, $NODES netns"
}

# Names for the node namespaces only (bind-mounted over /etc/hosts there); the root namespace uses NodeAddr.
write_hosts() {
  local i
  {
    echo "127.0.0.1 localhost"
    echo "$CTLD_ADDR $CTLD_NAME"
    for i in $(seq "$NODES"); do
      echo "$(node_addr "$i") $(node_name "$i")"
    done
  } >"$LAB/etc/hosts"
}

# Slurm accepts only character devices as GPU files; c 1 3 is /dev/null.
make_fake_gpus() {
  local i g dir
  for i in $(seq "$NODES"); do
    dir=$LAB/dev/$(node_name "$i")
    for g in $(seq 0 7); do
      mknod -m 666 "$dir/nvidia$g" c 1 3
    done
  done
}

write_slurm_conf() {
  local i name
  cat >"$CONF" <<EOF
# Generated by tests/cluster/start.sh: private Slurm test lab, do not edit.
ClusterName=sweeplab
SlurmctldHost=$CTLD_NAME($CTLD_ADDR)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET,cred_expire=10
StateSaveLocation=$LAB/state
SlurmdSpoolDir=$LAB/spool/%n
SlurmctldPidFile=$LAB/run/slurmctld.pid
SlurmdPidFile=$LAB/run/slurmd-%n.pid
SlurmctldLogFile=$LAB/log/slurmctld.log
SlurmdLogFile=$LAB/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$LAB/etc/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherParams=OverMemoryKill
EOF
  accounting_settings >>"$CONF"
  cat >>"$CONF" <<EOF
JobCompType=jobcomp/filetxt
JobCompLoc=$LAB/log/jobcomp.txt
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1000
SchedulerParameters=sched_min_interval=0,batch_sched_delay=0,bf_interval=1
SlurmdParameters=config_overrides
GresTypes=gpu
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=10
MessageTimeout=5
KillWait=2
EOF
  profile_settings >>"$CONF"
  cat >>"$CONF" <<EOF
# bench/scale_bench.sh queues 10,000 array tasks on top of earlier runs' records (kept MinJobAge).
MaxJobCount=$MAX_JOB_COUNT
EOF
  # SLURMSWEEP_MAX_ARRAY_SIZE: a site's smaller MaxArraySize (Slurm's default 1001), for the array-split tests.
  [[ -z $MAX_ARRAY_SIZE ]] || echo "MaxArraySize=$MAX_ARRAY_SIZE" >>"$CONF"
  for i in $(seq "$NODES"); do
    name=$(node_name "$i")
    echo "NodeName=$name NodeAddr=$(node_addr "$i") NodeHostname=$name CPUs=16 RealMemory=64000 Gres=gpu:8 State=UNKNOWN"
  done >>"$CONF"
  echo "PartitionName=$PARTITION Nodes=n[1-$NODES] Default=YES MaxTime=INFINITE State=UP" >>"$CONF"
  if [[ $PROFILE == production ]]; then
    echo "PartitionName=$URGENT_PARTITION Nodes=n[1-$NODES] MaxTime=INFINITE State=UP PriorityTier=10" >>"$CONF"
  fi

  for i in $(seq "$NODES"); do
    name=$(node_name "$i")
    echo "NodeName=$name Name=gpu File=$LAB/dev/$name/nvidia[0-7]"
  done >"$LAB/etc/gres.conf"
  : >"$LAB/etc/plugstack.conf"
  # slurmd 24.11+ wants a cgroup file system unless told not to (22.05 refuses the value).
  [[ $SLURM_VERSION == 22.05 ]] || echo "CgroupPlugin=disabled" >"$LAB/etc/cgroup.conf"
  log "slurm.conf (Slurm $SLURM_VERSION, $PROFILE profile): $NODES nodes x (16 CPUs, 64000 MB, 8 GPUs), ports $CTLD_PORT/$SLURMD_PORT"
}

# What differs between the profiles. lab: finished jobs stay in squeue for 5 minutes, so tests can look at
# every job after the fact. production: Slurm's defaults where sites keep them: JobRequeue=1 (node failure,
# preemption and `scontrol requeue` rerun a job under the same id), finished jobs leave squeue a few seconds
# after they end (MinJobAge), and jobs of $URGENT_PARTITION (PriorityTier=10) preempt those of $PARTITION by
# requeueing them (PreemptMode=REQUEUE).
profile_settings() {
  if [[ $PROFILE == production ]]; then
    printf '%s\n' JobRequeue=1 MinJobAge=5 PreemptType=preempt/partition_prio PreemptMode=REQUEUE
  else
    printf '%s\n' MinJobAge=300
  fi
}

accounting_settings() {
  if [[ $ACCOUNTING == slurmdbd ]]; then
    # AccountingStoragePass: the munge socket (else slurmctld dies with a munge error); job_comment keeps --comment.
    printf '%s\n' AccountingStorageType=accounting_storage/slurmdbd AccountingStorageHost=localhost \
      "AccountingStoragePort=$DBD_PORT" "AccountingStoragePass=$MUNGE_SOCKET" AccountingStoreFlags=job_comment \
      AccountingStorageEnforce=associations,limits,qos  # root's association comes with the cluster; tests add QOS limits
  elif [[ $SLURM_VERSION == 22.05 ]]; then
    printf '%s\n' AccountingStorageType=accounting_storage/none  # 24.11+ have no such plugin: no key is none
  fi
}

# SLURMSWEEP_ACCOUNTING=slurmdbd: a private MariaDB on 127.0.0.1:$DB_PORT (data under $LAB/mariadb) and slurmdbd
# on localhost:$DBD_PORT, with the cluster registered, before slurmctld starts: then sacct answers for purged jobs.
start_accounting() {
  [[ $ACCOUNTING == slurmdbd ]] || return 0
  local d=$LAB/mariadb sock=$LAB/mariadb/mariadb.sock
  mkdir -p "$d/data"
  mariadb-install-db --no-defaults --datadir="$d/data" --user=root --auth-root-authentication-method=socket \
    --skip-test-db >"$LAB/log/mariadb-install.log" 2>&1
  local extra=()
  # slurmdbd 24.11+ fails its queries under MariaDB 11.8's default snapshot isolation.
  [[ $SLURM_VERSION == 22.05 ]] || extra+=(--innodb-snapshot-isolation=OFF)
  mariadbd --no-defaults --datadir="$d/data" --user=root --socket="$sock" --port="$DB_PORT" "${extra[@]}" \
    --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$LAB/run/mariadbd.pid" \
    --log-error="$LAB/log/mariadbd.log" </dev/null >/dev/null 2>&1 &
  local deadline=$((SECONDS + READY_TIMEOUT))
  until mariadb-admin --no-defaults --socket="$sock" ping >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "mariadbd not up after ${READY_TIMEOUT}s"
    sleep 0.2
  done
  mariadb --no-defaults --socket="$sock" -e "CREATE DATABASE slurm_acct_db;
    CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'sslab'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
  cat >"$LAB/etc/slurmdbd.conf" <<EOF
# Generated by tests/cluster/start.sh
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=sslab
StorageLoc=slurm_acct_db
PidFile=$LAB/run/slurmdbd.pid
LogFile=$LAB/log/slurmdbd.log
EOF
  chmod 600 "$LAB/etc/slurmdbd.conf"
  SLURM_CONF=$CONF slurmdbd
  until SLURM_CONF=$CONF sacctmgr -n list cluster >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "slurmdbd not answering after ${READY_TIMEOUT}s"
    sleep 0.2
  done
  SLURM_CONF=$CONF sacctmgr -i add cluster sweeplab >/dev/null
  log "accounting: slurmdbd on localhost:$DBD_PORT, MariaDB on 127.0.0.1:$DB_PORT"
}

start_slurmctld() {
  "$LAB/bin/start-slurmctld"
  log "slurmctld up on $CTLD_ADDR:$CTLD_PORT"
}

start_slurmds() {
  local i name
  for i in $(seq "$NODES"); do
    name=$(node_name "$i")
    SLURM_CONF=$CONF nsenter --net="/run/netns/$(node_netns "$i")" \
      unshare --uts --mount --propagation private \
      sh -c "mount --bind '$LAB/etc/hosts' /etc/hosts && hostname $name && exec slurmd -f '$CONF' -N $name"
  done
  log "slurmd up on n[1-$NODES]"
}

ssh_known_hosts_line() {
  local pub=$1
  echo "[127.0.0.1]:$SSH_PORT $(cut -d' ' -f1,2 "$pub")"
}

start_sshd() {
  local d=$LAB/ssh
  ssh-keygen -q -t ed25519 -N '' -C sslab-host -f "$d/ssh_host_ed25519_key"
  ssh-keygen -q -t ed25519 -N '' -C sslab-client -f "$d/id_ed25519"
  ssh-keygen -q -t ed25519 -N '' -C sslab-wrong-host -f "$d/wrong_host_ed25519_key"
  cp "$d/id_ed25519.pub" "$d/authorized_keys"
  ssh_known_hosts_line "$d/ssh_host_ed25519_key.pub" >"$d/known_hosts"
  ssh_known_hosts_line "$d/wrong_host_ed25519_key.pub" >"$d/wrong_known_hosts"
  cat >"$d/sshd_config" <<EOF
# Generated by tests/cluster/start.sh
ListenAddress 127.0.0.1:$SSH_PORT
HostKey $d/ssh_host_ed25519_key
PidFile $LAB/run/sshd.pid
AuthorizedKeysFile $d/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
Subsystem sftp internal-sftp
SetEnv SLURM_CONF=$CONF
EOF
  mkdir -p /run/sshd
  "$LAB/bin/start-sshd"
  log "sshd up on 127.0.0.1:$SSH_PORT"
}

write_env() {
  {
    echo "# Generated by tests/cluster/start.sh; source it to use the lab."
    printf 'export %s=%q\n' \
      SLURM_CONF "$CONF" \
      SLURMSWEEP_LAB "$LAB" \
      SLURMSWEEP_SSH_HOST 127.0.0.1 \
      SLURMSWEEP_SSH_PORT "$SSH_PORT" \
      SLURMSWEEP_SSH_USER root \
      SLURMSWEEP_SSH_KEY "$LAB/ssh/id_ed25519" \
      SLURMSWEEP_SSH_KNOWN_HOSTS "$LAB/ssh/known_hosts" \
      SLURMSWEEP_SSH_WRONG_KNOWN_HOSTS "$LAB/ssh/wrong_known_hosts" \
      SLURMSWEEP_PARTITION "$PARTITION" \
      SLURMSWEEP_PROFILE "$PROFILE" \
      SLURMSWEEP_ACCOUNTING "$ACCOUNTING" \
      SLURMSWEEP_SLURM "$SLURM_VERSION"
    if [[ -n $ROOT ]]; then
      echo "# Slurm $SLURM_VERSION runs in $ROOT: its commands are wrappers in $LAB/bin."
      printf 'export %s=%q\n' SLURMSWEEP_SLURM_ROOT "$ROOT"
      printf 'export PATH=%q:"$PATH"\n' "$LAB/bin"
    fi
    if [[ $PROFILE == production ]]; then
      printf 'export %s=%q\n' SLURMSWEEP_URGENT_PARTITION "$URGENT_PARTITION"
    fi
    echo "# How this lab was built (stop.sh reads SLURMSWEEP_NET_PREFIX from here)."
    printf 'export %s=%q\n' \
      SLURMSWEEP_NODES "$NODES" \
      SLURMSWEEP_SLURMCTLD_PORT "$CTLD_PORT" \
      SLURMSWEEP_SLURMD_PORT "$SLURMD_PORT" \
      SLURMSWEEP_NET_PREFIX "$NET_PREFIX" \
      SLURMSWEEP_SUBNET "$SUBNET" \
      SLURMSWEEP_SLURMDBD_PORT "$DBD_PORT" \
      SLURMSWEEP_MARIADB_PORT "$DB_PORT"
  } >"$LAB/env"
}

nodes_idle() {
  local states
  states=$(SLURM_CONF=$CONF sinfo -h -N -p "$PARTITION" -o '%N %t' 2>/dev/null) || return 1
  [[ $(grep -c ' idle$' <<<"$states") -eq $NODES ]]
}

ssh_sees_nodes() {
  local out
  out=$(ssh -i "$LAB/ssh/id_ed25519" -o UserKnownHostsFile="$LAB/ssh/known_hosts" -o GlobalKnownHostsFile=/dev/null \
      -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=3 -F /dev/null -p "$SSH_PORT" \
      root@127.0.0.1 "sinfo -h -N -p $PARTITION -o %N" 2>/dev/null) || return 1
  [[ $(wc -l <<<"$out") -eq $NODES ]]
}

wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT))
  until nodes_idle; do
    ((SECONDS < deadline)) || { SLURM_CONF=$CONF sinfo -N >&2 || true; fail "nodes not idle after ${READY_TIMEOUT}s"; }
    sleep 0.2
  done
  log "nodes idle"
  until ssh_sees_nodes; do
    ((SECONDS < deadline)) || fail "ssh to 127.0.0.1:$SSH_PORT does not work after ${READY_TIMEOUT}s"
    sleep 0.2
  done
}

main() {
  trap 'on_error $LINENO' ERR
  check_prerequisites
  clean_previous_run
  make_dirs
  prepare_root
  write_start_scripts
  start_munge
  make_network
  write_hosts
  make_fake_gpus
  write_slurm_conf
  start_accounting
  start_slurmctld
  start_slurmds
  start_sshd
  write_env
  wait_ready
  echo "start: lab (Slurm $SLURM_VERSION, $PROFILE profile) ready in $(elapsed)s: $NODES nodes idle in partition $PARTITION (slurmctld $CTLD_ADDR:$CTLD_PORT)," \
    "sshd root@127.0.0.1:$SSH_PORT; source $LAB/env"
}

main "$@"
