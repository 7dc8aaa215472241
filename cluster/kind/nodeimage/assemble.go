package nodeimage

import (
	"context"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

//go:embed files/setup.sh files/prepare.sh files/10-informer-conformance.conflist
var files embed.FS

// Entrypoint is the node image's entrypoint: the restricted-host preparation,
// then kind's entrypoint, then systemd, as kind's base image has it.
var Entrypoint = []string{"/usr/local/bin/informer-conformance-node-prepare", "/usr/local/bin/entrypoint", "/sbin/init"}

// nodeImage assembles the node image from the root filesystem image: a build
// container (not privileged, as kind's buildImage), kind's base files and the
// binaries copied in, setup.sh run inside, then committed.
func (b *builder) nodeImage(ctx context.Context, rootfs, baseFiles, kube, crictl, imagesTar string) error {
	if err := os.MkdirAll(filepath.Join(b.cache, "tmp"), 0o755); err != nil {
		return err
	}
	stage, err := os.MkdirTemp(filepath.Join(b.cache, "tmp"), "kind-node-stage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	if err := stageBaseFiles(baseFiles, stage); err != nil {
		return fmt.Errorf("stage kind's base files: %w", err)
	}
	copies := map[string]string{
		"usr/bin/kubeadm":      filepath.Join(kube, "kubeadm"),
		"usr/bin/kubelet":      filepath.Join(kube, "kubelet"),
		"usr/bin/kubectl":      filepath.Join(kube, "kubectl"),
		"usr/local/bin/crictl": crictl,
		"kind/images.tar":      imagesTar,
	}
	for dst, src := range copies {
		if err := CopyFile(src, filepath.Join(stage, dst), 0o755); err != nil {
			return err
		}
	}
	embedded := map[string]string{
		"files/setup.sh":                         "kind/informer-conformance-setup.sh",
		"files/prepare.sh":                       "usr/local/bin/informer-conformance-node-prepare",
		"files/10-informer-conformance.conflist": "etc/cni/net.d/10-informer-conformance.conflist",
	}
	for src, dst := range embedded {
		data, err := files.ReadFile(src)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(src, ".sh") {
			mode = 0o755
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(stage, dst)), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(stage, dst), data, mode); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(stage, "kind", "version"), []byte(b.version+"\n"), 0o644); err != nil {
		return err
	}

	name := fmt.Sprintf("informer-conformance-node-build-%d", os.Getpid())
	_, _ = b.d.Run(ctx, nil, "rm", "-f", "-v", name)
	if _, err := b.d.Run(ctx, nil, "run", "--detach", "--name", name,
		"--label", LabelOwner+"="+OwnerBuildContainer,
		"--security-opt", "seccomp=unconfined", "--entrypoint", "sleep", rootfs, "infinity"); err != nil {
		return err
	}
	defer func() { _, _ = b.d.Run(context.Background(), nil, "rm", "-f", "-v", name) }()
	fmt.Fprintf(b.opts.Progress, "  docker cp kind's base files, kubeadm, kubelet, kubectl, crictl, images into %s\n", name)
	if _, err := b.d.Run(ctx, nil, "cp", stage+"/.", name+":/"); err != nil {
		return err
	}
	fmt.Fprintf(b.opts.Progress, "  running the setup inside %s\n", name)
	out, err := b.d.Run(ctx, nil, "exec", name, "/kind/informer-conformance-setup.sh")
	if err != nil {
		return fmt.Errorf("%w\n%s", err, tailLines(string(out), 30))
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fmt.Fprintf(b.opts.Progress, "    %s\n", l)
	}
	if _, err := b.d.Run(ctx, nil, "exec", name, "rm", "-f", "/kind/informer-conformance-setup.sh"); err != nil {
		return err
	}
	var ep []string
	for _, e := range Entrypoint {
		ep = append(ep, fmt.Sprintf("%q", e))
	}
	// docker commit --change cannot set STOPSIGNAL on Docker 20.10, so the
	// image's config is set by a Dockerfile on top of the committed layer.
	committed := b.tag + "-committed"
	fmt.Fprintf(b.opts.Progress, "  docker commit %s; docker build %s (entrypoint, stop signal, labels)\n", name, b.tag)
	if _, err := b.d.Run(ctx, nil, "commit", name, committed); err != nil {
		return err
	}
	defer func() { _, _ = b.d.Run(context.Background(), nil, "rmi", committed) }()
	dockerfile := strings.Join([]string{
		"FROM " + committed,
		"ENV container=docker",
		"STOPSIGNAL SIGRTMIN+3",
		"LABEL " + LabelOwner + "=kind-node io.informer-conformance.kubernetes-version=" + b.version,
		"ENTRYPOINT [" + strings.Join(ep, ", ") + "]",
		"CMD []",
	}, "\n") + "\n"
	// The classic builder: no frontend image to pull, no buildx needed.
	_, err = b.d.RunEnv(ctx, []string{"DOCKER_BUILDKIT=0"}, strings.NewReader(dockerfile), "build", "--quiet", "--tag", b.tag, "-")
	return err
}

// CopyFile copies src to dst with mode, making dst's directory: a file
// staged into an image's root filesystem (the load balancer image's too).
func CopyFile(src, dst string, mode os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, mode)
}
