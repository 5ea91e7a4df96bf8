#!/usr/bin/env bash
# Installs everything slurmsweep needs to build and to run its tests/cluster lab on a fresh Debian 12.
# Run as root. Idempotent: when every package is already installed it returns in well under a second.
# `setup.sh --quickstart` installs only what the quickstart runs (no fuzzing, browser, accounting or
# benchmark peers); `setup.sh --build` only what scripts/build.sh needs (tool chain and libraries):
# scripts/quickstart.sh runs --build, then --quickstart while it builds; scripts/test.sh installs everything.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

# What the build needs: the tool chain and the libraries.
BUILD_PACKAGES=(
  make cmake g++ pkg-config git ca-certificates
  libsqlite3-dev sqlite3 libboost1.81-dev libssh-dev libtomlplusplus-dev catch2
  nlohmann-json3-dev libcli11-dev libfmt-dev
)
# What the quickstart needs on top: the lab's services.
LAB_PACKAGES=(
  # test lab: Slurm, munge, sshd and the tools tests/cluster/start.sh uses
  slurmctld slurmd slurm-client munge openssh-server openssh-client
  iproute2 util-linux procps
  netbase  # /etc/hosts where a minimal root has none (start.sh bind-mounts the nodes' names over it)
)
# What the whole test suite and the benchmarks need on top.
TEST_PACKAGES=(
  clang libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer targets
  clang-format  # scripts/format-check.sh (ctest's `format`): the tree as .clang-format says
  slurmdbd mariadb-server  # accounting in the fault tests' lab (SLURMSWEEP_ACCOUNTING=slurmdbd)
  chromium  # tests/report_browser_test.cc and scripts/report-screenshot.sh render the HTML report
  python3  # the template oracle tests run python3 here-documents
  rsync  # the template oracle's option-reading class (with tar, coreutils and git, installed already)
  python3-optuna  # bench/optuna_pruners.py: the pruners stopping_bench compares ours with
  time  # /usr/bin/time: peak RSS in bench/scale_bench.sh
  python3-torch  # PyTorch 1.13 (CPU, torchrun, gloo): examples/workload/torch_gpt.py, tests/torch_cluster_test.cc
  mmdebstrap  # tests/cluster/slurm-root.sh: the Debian roots of the Slurm 24.11 and 26.05 labs
  libpam-oath oathtool  # tests/cluster/sites.sh: the sshd that asks for a TOTP code after the key
  sshfs  # tests/two_hosts_test.cc: two "login nodes" mount one study directory over FUSE
)

step() { echo "setup: $*"; }

check_root() {
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: must run as root" >&2
    exit 1
  fi
}

# Prints the packages that dpkg does not report as fully installed.
missing_packages() {
  local installed pkg
  installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${PACKAGES[@]}" 2>/dev/null |
    awk '$NF == "installed" && $(NF-1) == "ok" {print $1}' || true)
  for pkg in "${PACKAGES[@]}"; do
    grep -qxF "$pkg" <<<"$installed" || echo "$pkg"
  done
}

install_packages() {
  local missing
  missing=$(missing_packages | tr '\n' ' ')
  if [[ -z ${missing// /} ]]; then
    step "all ${#PACKAGES[@]} packages already installed, skipping apt-get"
    return
  fi
  step "missing: $missing"
  # scripts/quickstart.sh runs setup.sh twice in a row (--build, then --quickstart): one update is enough.
  local stamp=/var/cache/slurmsweep/apt-updated
  if [[ -n $(find "$stamp" -mmin -30 2>/dev/null) ]]; then
    step "package lists updated by setup.sh in the last 30 min, no apt-get update"
  else
    step "apt-get update"
    apt-get update -q
    mkdir -p "${stamp%/*}" && touch "$stamp"
  fi
  step "apt-get install -y --no-install-recommends (${#PACKAGES[@]} packages)"
  # --force-unsafe-io: dpkg skips its fsync per unpacked file (what debootstrap does); on a fresh machine
  # most of this step's time was those syncs (442 s without it, see bench/README.md).
  apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io "${PACKAGES[@]}"
}

check_tools() {
  local tool tools=(cmake make g++)
  [[ $1 == build ]] || tools+=(slurmctld slurmd sbatch munged mungekey /usr/sbin/sshd ssh-keygen ip nsenter unshare mknod)
  for tool in "${tools[@]}"; do
    command -v "$tool" >/dev/null || { echo "setup: $tool not found after install" >&2; exit 1; }
  done
  step "tools present: cmake $(cmake --version | head -1 | awk '{print $3}')$([[ $1 == build ]] ||
    echo ", slurm $(dpkg-query -W -f='${Version}' slurmctld)")"
}

main() {
  PACKAGES=("${BUILD_PACKAGES[@]}")
  case "${1:-}" in
    --build) ;;
    --quickstart) PACKAGES+=("${LAB_PACKAGES[@]}") ;;
    "") PACKAGES+=("${LAB_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
    *) echo "setup: unknown option '$1' (known: --build, --quickstart)" >&2; exit 2 ;;
  esac
  check_root
  install_packages
  local option=${1:-}
  check_tools "${option#--}"
  step "done"
}

main "$@"
