#!/usr/bin/env bash
# informer-conformance: runs before kind's entrypoint at every node start. On a
# host that started the node with the restricted-host adapter instead of
# --privileged (docs/backends.md: "kind on restricted hosts") it adapts the node to what
# that container lacks; on a node started --privileged it changes nothing.
set -o errexit -o nounset -o pipefail

# Without CAP_SYS_RESOURCE (not in the bounding set) nothing may lower an
# oom_score_adj or raise a hard rlimit: containerd must clamp the scores the
# kubelet asks for (restrict_oom_score_adj) and its unit must not ask for
# OOMScoreAdjust=-999 or LimitNOFILE=infinity.
capbnd=$(awk '/^CapBnd:/ {print $2}' /proc/self/status)
if (( (16#$capbnd >> 24 & 1) == 0 )); then
  echo "INFO: informer-conformance: CAP_SYS_RESOURCE is not in this node's bounding set: containerd restrict_oom_score_adj = true, its unit keeps oom_score_adj $(cat /proc/self/oom_score_adj) and nofile $(ulimit -Hn)"
  sed -i 's/restrict_oom_score_adj = false/restrict_oom_score_adj = true/' /etc/containerd/config.toml
  mkdir -p /etc/systemd/system/containerd.service.d
  printf '[Service]\nOOMScoreAdjust=%s\nLimitNOFILE=%s\n' "$(cat /proc/self/oom_score_adj)" "$(ulimit -Hn)" \
    > /etc/systemd/system/containerd.service.d/20-informer-conformance-restricted-host.conf
fi

# A container that is not privileged gets its cgroup mounts read-only; the
# kubelet and containerd create cgroups, as they do on a privileged node.
ro=$(findmnt -R -n -l -o TARGET,OPTIONS /sys/fs/cgroup | awk '$2 ~ /(^|,)ro(,|$)/ {print $1}')
if [[ -n $ro ]]; then
  echo "INFO: informer-conformance: cgroup mounts are read-only (not a privileged container): remounting them read-write"
  for m in $ro; do
    mount -o remount,rw "$m" 2>/dev/null || mount -o remount,bind,rw "$m"
  done
fi

exec "$@"
