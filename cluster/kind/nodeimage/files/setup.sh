#!/usr/bin/env bash
# Runs once inside the node image's build container (cluster/kind/nodeimage):
# the RUN steps of kind's images/base/Dockerfile and the image preload of
# kind's pkg/build/nodeimage (containerdImporter), for a root filesystem
# whose containerd, runc and CNI plugins come from Debian's packages.
set -o errexit -o nounset -o pipefail

echo "placing Debian's containerd, runc and CNI plugins where kind's units and config expect them"
for b in containerd ctr containerd-shim-runc-v2; do ln -sf "/usr/bin/$b" "/usr/local/bin/$b"; done
mkdir -p /usr/local/sbin /opt/cni/bin
ln -sf /usr/sbin/runc /usr/local/sbin/runc
for p in host-local loopback ptp portmap bridge; do ln -sf "/usr/lib/cni/$p" "/opt/cni/bin/$p"; done

echo "kind's base image steps: units, journald, /sbin/init"
chmod 755 /kind /kind/bin
find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete
rm -f /lib/systemd/system/multi-user.target.wants/* \
  /etc/systemd/system/*.wants/* \
  /lib/systemd/system/local-fs.target.wants/* \
  /lib/systemd/system/sockets.target.wants/*udev* \
  /lib/systemd/system/sockets.target.wants/*initctl* \
  /lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >> /etc/systemd/journald.conf
ln -sf /usr/lib/systemd/systemd /sbin/init
systemctl enable kubelet.service containerd.service undo-mount-hacks.service
systemctl mask systemd-binfmt.service
mkdir -p /etc/kubernetes/manifests /var/lib/kubelet

echo "containerd's base runtime spec (kind: ctr oci spec, product-files hook, no rlimits)"
ctr oci spec \
  | jq '.hooks.createContainer[.hooks.createContainer| length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
  | jq 'del(.process.rlimits)' > /etc/containerd/cri-base.json

echo "preloading the control-plane images into containerd's k8s.io namespace"
containerd --config /etc/containerd/config.toml >/tmp/containerd.log 2>&1 &
pid=$!
for _ in $(seq 1 100); do ctr version >/dev/null 2>&1 && break; sleep 0.1; done
ctr version >/dev/null || { cat /tmp/containerd.log; exit 1; }
ctr --namespace=k8s.io images import --label=io.cri-containerd.pinned=pinned --all-platforms --no-unpack --digests /kind/images.tar
ctr --namespace=k8s.io images ls -q | grep -v '^sha256:'
kill "$pid"
wait "$pid" || true
rm -f /kind/images.tar /tmp/containerd.log
containerd --version
runc --version | head -1
crictl --version
kubelet --version
