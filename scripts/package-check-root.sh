#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/package-check.sh's part inside the fresh Debian root (run there by chroot, as root).
#   install: apt sources are reachable: the admin guide's install blocks, the consumers' compilers.
#   cluster: in a network namespace of its own (loopback only): enable the plugin, start a local
#            cluster from the installed paths, the grid example as user alice, dlx doctor,
#            import dlx, the consumer projects, removing and reinstalling the plugin package,
#            uninstalling.
# The admin guide's blocks are in /root/check/doc/NAME.(root|user).sh; root blocks run as root,
# user blocks as alice, both with the cluster's client environment once it runs (`dlx cluster
# env`: SLURM_CONF, where a real host has /etc/slurm/slurm.conf).
set -euo pipefail
cd /root/check
failures=0
say() { echo "package-check: $*"; }
fail() { echo "package-check: FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "package-check: ok: $*"; }
export LC_ALL=C.UTF-8

# doc NAME: run the admin guide's block NAME as it says (root, or user alice), echoing it.
doc() {
  local file
  file=$(ls doc/"$1".*.sh 2> /dev/null) || { fail "docs/admin-guide.md has no tested block '$1'"; return 1; }
  sed "s/^/  $1\$ /" "$file" >&2
  case $file in
    *.root.sh) (cd /root/check && { eval "$(dlx cluster env 2> /dev/null)" || true; } && bash -euo pipefail "$file") ;;
    *.user.sh) cp "$file" /home/alice/block.sh && chown alice /home/alice/block.sh
               runuser -u alice -- bash -c 'cd && eval "$(dlx cluster env)" && bash -euo pipefail block.sh' ;;
  esac
}
as_alice() { runuser -u alice -- bash -c 'cd && eval "$(dlx cluster env)" && '"$1"; }

case $1 in
install)
  # apt's output goes to a log, shown when a step fails.
  log=/root/check/install.log
  quiet() { "$@" >> "$log" 2>&1 || { tail -30 "$log"; fail "$*"; exit 1; }; }
  quiet apt-get update
  quiet doc install
  quiet doc cluster-install
  quiet apt-get install --yes --no-install-recommends build-essential cmake pkg-config
  grep '\$ ' "$log"
  dpkg-query -W -f '${Package} ${Version}\n' dlx slurm-spank-plugin-dlx libdlx0.1 libdlx-c0 libdlx-dev
  if ls dist/libdlx-c0-portable_*.deb > /dev/null 2>&1; then dpkg-query -W -f '${Package} ${Version}\n' libdlx-c0-portable; fi
  ;;
cluster)
  useradd --create-home alice
  useradd --create-home bob
  doc enable || fail "block enable"
  doc cluster-up || fail "block cluster-up"
  doc storage-users || fail "block storage-users"
  # The cluster's configuration names only installed paths, and the plugin comes from
  # plugstack.conf.d.
  conf=$(dlx cluster env | sed -n 's/^export SLURM_CONF=//p' | tr -d "'\"")
  if grep -E '/(root/check|work|build)' "$conf" > /dev/null; then fail "$conf names a build tree"; fi
  grep -qx 'PlugStackConfig=/etc/slurm/plugstack.conf' "$conf" && ok "PlugStackConfig=/etc/slurm/plugstack.conf" ||
    fail "$conf: $(grep PlugStackConfig "$conf")"

  out=$(doc submit 2>&1) || true
  echo "$out"
  job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' <<< "$out")
  if [ -z "$job" ]; then
    fail "the grid example was not submitted"
  else
    for _ in $(seq 300); do [ -z "$(as_alice "squeue -h -j $job" 2> /dev/null)" ] && break; sleep 1; done
    status=$(as_alice "dlx status $job" 2>&1) || true
    echo "$status"
    grep -q "# 4 trials: 4 completed" <<< "$status" && ok "grid example: 4 trials completed as alice" ||
      fail "grid example: $(tail -3 <<< "$status")"
  fi
  out=$(doc doctor 2>&1) && ok "dlx doctor passes" || fail "dlx doctor"
  echo "$out"
  out=$(doc python) && [ "$out" = /usr/lib/python3/dist-packages/dlx/__init__.py ] &&
    ok "import dlx with /usr/bin/python3: $out" || fail "import dlx: $out"

  # The portable libdlx_c (package-check.sh with DLX_PACKAGE_CHECK_PORTABLE): installed where
  # dlx-launch looks for it, and loaded by the installed Python module as alice.
  if ls dist/libdlx-c0-portable_*.deb > /dev/null 2>&1; then
    portable_lib=$(dpkg -L libdlx-c0-portable | grep '/dlx/container/libdlx_c\.so\.0$' || true)
    out=$(as_alice "DLX_LIBRARY=$portable_lib /usr/bin/python3 -c 'import dlx, dlx._library as l; l.library(); print(l._library_path())'" 2>&1) &&
      [ "$out" = "$portable_lib" ] && ok "libdlx-c0-portable: import dlx loads $out" ||
      fail "libdlx-c0-portable: $portable_lib does not load: $out"
  fi

  # The out-of-tree projects, against the installed libdlx-dev.
  cp -r consumer /home/alice/consumer && chown -R alice /home/alice/consumer
  for how in find_package pkg-config; do
    case $how in
      find_package) build='cmake -S consumer -B consumer-build > /dev/null && cmake --build consumer-build > /dev/null && cd consumer-build' ;;
      pkg-config) build='mkdir -p pc && cc -o pc/consumer_c consumer/consumer.c $(pkg-config --cflags --libs dlx-c) &&
                         c++ -std=c++20 -o pc/consumer_cpp consumer/consumer.cpp $(pkg-config --cflags --libs dlx) && cd pc' ;;
    esac
    out=$(runuser -u alice -- bash -c "cd && $build && DLX_HPARAMS='{\"lr\": 0.25}' ./consumer_cpp && DLX_HPARAMS='{\"lr\": 0.25}' ./consumer_c" 2>&1) &&
      ok "$how: $(tr '\n' ' ' <<< "$out")" || fail "$how consumers: $out"
  done

  # Removing the plugin package: plain jobs keep running; reinstalling enables it again.
  doc remove-plugin || fail "block remove-plugin"
  [ ! -e /etc/slurm/plugstack.conf.d/dlx.conf ] && [ -f /etc/slurm/plugstack.conf.d/dlx.conf.dpkg-disabled ] &&
    ok "dpkg -r set the plugstack line aside" || fail "after dpkg -r: $(ls /etc/slurm/plugstack.conf.d)"
  out=$(as_alice 'srun -N2 hostname && sbatch --wait -o plain.out --wrap "echo plain job" > /dev/null && cat plain.out' 2>&1) &&
    ok "plain jobs without the plugin: $(tr '\n' ' ' <<< "$out")" || fail "plain jobs after dpkg -r: $out"
  # The help is read whole before grep looks at it: `sbatch --help | grep -q` under pipefail fails
  # whenever grep's early exit gives sbatch a SIGPIPE.
  help=$(as_alice 'sbatch --help' 2>&1)
  grep -q -- --dl-experiment <<< "$help" && fail "sbatch still offers --dl-experiment"
  doc upgrade-plugin || fail "block upgrade-plugin"
  help=$(as_alice 'sbatch --help' 2>&1)
  grep -q -- --dl-experiment <<< "$help" && ok "reinstalled: sbatch offers --dl-experiment again" ||
    fail "the reinstalled plugin is not enabled: $(ls /etc/slurm/plugstack.conf.d)"

  doc cluster-down || fail "block cluster-down"
  doc uninstall || fail "block uninstall"
  # libdlx-c0-portable depends on dlx: purging dlx removes it too.
  left=$(dpkg-query -W -f '${Package} ${Status}\n' dlx slurm-spank-plugin-dlx libdlx0.1 libdlx-c0 libdlx-dev \
           libdlx-c0-portable 2> /dev/null |
         grep -v 'not-installed' || true)
  [ -z "$left" ] && [ -z "$(ls /etc/slurm/plugstack.conf.d)" ] && ok "uninstalled and purged" ||
    fail "after uninstalling: $left $(ls /etc/slurm/plugstack.conf.d)"
  say "$failures failure(s)"
  [ "$failures" -eq 0 ]
  ;;
*) echo "usage: package-check-root.sh install|cluster" >&2; exit 2 ;;
esac
