#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `dlx doctor` on the live local cluster, as an ordinary user: the requeue and preemption settings
# dlx relies on are all found (exit 0), the short GraceTime of `low` (10 s, so that the tests stay
# fast) is a warning naming DLX_EXIT_DEADLINE_S; a saved report with them missing fails (exit 1)
# and says what to change. The container runtimes of the host, as the user: podman and crun (runc
# here) start a container, apptainer and enroot are not installed (skipped, not failed); with
# --containers only they are checked, on a node through srun.
source "$(dirname "$0")/lib.sh"

# Podman as a site sets it up where the cgroups are a v1/v2 hybrid, as these hosts' are (the admin
# guide, Containers; dlx doctor starts a container to tell, and cluster.container shows it warn
# without this): runc and cgroupfs, storage under the user's home (HOME=$WORK).
mkdir -p "$WORK/.config/containers"
printf '[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' \
  > "$WORK/.config/containers/containers.conf"
printf '[storage]\ndriver = "vfs"\n' > "$WORK/.config/containers/storage.conf"
chown -R "$DLX_TEST_USER" "$WORK/.config"

report=$(as_user dlx doctor) || fail "dlx doctor found a problem on the local cluster: $report"
for check in plugin storage_root JobRequeue RequeueExit cred_expire PreemptType preempt_send_user_signal \
             "partition low: PreemptMode" "MPI plugin"; do
  grep -Eq "^ok +$check " <<< "$report" || fail "'$check' is not ok in: $report"
done
grep -Eq "^warn +partition low: GraceTime +10 s" <<< "$report" || fail "no GraceTime warning in: $report"
expect_contains "advice" "$report" "DLX_EXIT_DEADLINE_S"
grep -q "partition high" <<< "$report" && fail "the top-tier partition was judged as preemptible: $report"

json=$(as_user dlx doctor --json)
/usr/bin/python3 -c 'import json,sys; f=json.load(sys.stdin); assert all(x["verdict"] in ("ok","warn","skip") for x in f), f' <<< "$json" ||
  fail "dlx doctor --json is not a list of ok/warn/skip findings: $json"
for runtime in podman crun; do
  grep -Eq "^ok +container runtime $runtime +starts containers here" <<< "$report" ||
    fail "the container runtime $runtime is not ok in: $report"
done
grep -Eq "^skip +container runtime enroot +enroot is not installed" <<< "$report" || fail "enroot is not skipped in: $report"
on_node=$(as_user srun -N1 -w n2 dlx doctor --containers) || fail "dlx doctor --containers on a node: $on_node"
expect_contains "dlx doctor --containers on n2" "$on_node" "# dlx doctor: the container runtimes of this host"
grep -q "JobRequeue" <<< "$on_node" && fail "--containers checked Slurm's settings too: $on_node"
grep -Eq "^ok +container runtime crun" <<< "$on_node" || fail "crun is not ok on n2: $on_node"
# The tests' prefix has dlx's own libdlx_c only: a warning that says how to get the portable one.
grep -Eq "^warn +the dlx SDK in containers +containers get dlx's own libdlx_c $PREFIX/" <<< "$on_node" ||
  fail "no warning about the SDK containers get on n2: $on_node"
expect_contains "dlx doctor --containers: the SDK's advice" "$on_node" "build the portable one (scripts/portable-c.sh)"
# No NVIDIA devices on the test nodes: the driver's mount into crun containers (and podman's, with
# no NVIDIA CDI spec here) is not judged.
taking_driver=crun
grep -Eq "^ok +container runtime podman" <<< "$on_node" && taking_driver="crun and podman"
grep -Eq "^skip +the NVIDIA driver in $taking_driver containers +no NVIDIA GPU on this host" <<< "$on_node" ||
  fail "the NVIDIA driver check ($taking_driver) is not skipped on n2 (no GPU): $on_node"

# The same cluster's reports, saved, with the requeue settings taken out (as on an unprepared site).
as_user bash -c 'scontrol show config | sed -e "s/^JobRequeue .*/JobRequeue = 0/" -e "s/^RequeueExit .*/RequeueExit = (null)/" \
  -e "s/preempt_send_user_signal/(null)/" > bad-config.txt && scontrol show partition -o > partitions.txt'
if bad=$(as_user dlx doctor --config bad-config.txt --partitions partitions.txt); then
  fail "dlx doctor accepted a configuration without JobRequeue/RequeueExit: $bad"
fi
expect_contains "JobRequeue advice" "$bad" "set JobRequeue=1 in slurm.conf"
expect_contains "RequeueExit advice" "$bad" "add 85 to RequeueExit"
expect_contains "notice advice" "$bad" "add preempt_send_user_signal to SlurmctldParameters"
expect_contains "summary" "$bad" "# 3 problems"

usage=$(as_user dlx doctor --partitions partitions.txt 2>&1) && fail "--partitions without --config was accepted"
expect_contains "usage error" "$usage" "--partitions goes with --config"
note "dlx doctor: local cluster ok, missing settings reported"
