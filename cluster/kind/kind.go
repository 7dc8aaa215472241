// Package kind is the kind backend: real kind clusters created, configured
// and deleted by kind's own Go code (sigs.k8s.io/kind/pkg/cluster, docker
// provider), one control-plane node or several behind kind's load balancer
// (Options.APIServers; offline its image is built by cluster/kind/lbimage),
// with the capabilities a kind cluster can honestly offer: the restart of
// each kube-apiserver (graceful: its static pod manifest out of and back
// into the kubelet's manifest directory; hard: its container killed, the
// kubelet starts it again) and etcd compaction (an etcd client with
// certificates copied from a node). A cluster may run kube-apiserver with
// a flag profile (package cluster/profile), rendered into kubeadm's
// configuration (profile.go).
//
// On a host whose Docker daemon refuses privileged containers (see
// cluster/kind/docker) the backend detects it and puts the restricted-host
// adapter first on this process's PATH; kind's code is unchanged.
//
// Everything the backend makes carries a label: node containers kind's
// io.x-k8s.kind.cluster with a value starting with NamePrefix, the docker
// network (NetworkName) io.informer-conformance.owner. A cluster's owner
// holds a lock while it lives; ReapStale (run by every Start, and by
// `make kind-clean`) deletes the clusters whose owner is gone, and nothing
// else.
//
// Plain Go that returns errors.
package kind

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/cluster/kind/docker"
	"github.com/informer-conformance/informer-conformance/cluster/kind/lbimage"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
	"github.com/informer-conformance/informer-conformance/cluster/lifetime"
	"github.com/informer-conformance/informer-conformance/cluster/profile"
	"github.com/informer-conformance/informer-conformance/internal/processenv"
)

const (
	// EnvNodeImage selects the node image (for example a published
	// kindest/node:v1.36.x); default: the image `make kind-image` builds.
	EnvNodeImage = "KIND_NODE_IMAGE"
	// NamePrefix starts the name of every cluster the backend creates.
	NamePrefix = "informer-conformance-"
	// NetworkName is the docker network the nodes join (kind's
	// KIND_EXPERIMENTAL_DOCKER_NETWORK), created with the owner label.
	NetworkName = "informer-conformance"
	// CreateTimeout bounds creating a cluster, kubeadm init included.
	CreateTimeout = 5 * time.Minute
	// ReadyTimeout bounds waiting for kube-apiserver's /readyz.
	ReadyTimeout = 2 * time.Minute
	// MaxAPIServers bounds Options.APIServers: every control-plane node is a
	// full control plane with an etcd member, on one host.
	MaxAPIServers = 3
	// StopTimeout bounds waiting for a stopped kube-apiserver container to be
	// gone: the pod's termination grace period (30 s, kubeadm sets none) and
	// the kubelet's sync.
	StopTimeout = 90 * time.Second
)

// Options tune Start. Zero values mean the defaults.
type Options struct {
	// Name of the cluster; default NamePrefix + random hex.
	Name string
	// Image is the node image; default $KIND_NODE_IMAGE, then the image
	// `make kind-image` builds for KubeVersion.
	Image string
	// KubeVersion selects the built image (default binaries.DefaultKubeVersion).
	KubeVersion string
	// ArtifactsDir receives exported logs; default a directory under os.TempDir.
	ArtifactsDir string
	// CacheDir is where the restricted-host adapter lives (default as cluster/binaries).
	CacheDir string
	// APIServers is the number of control-plane nodes, each running
	// kube-apiserver and a stacked etcd member; 0 means 1. With more, kind
	// puts its load balancer in front of them (kind's own Envoy where Docker
	// has it or can pull it, else the stand-in lbimage.Build makes, given
	// kind's name while kind creates the cluster: lbimage.Use), at most
	// MaxAPIServers.
	APIServers int
	// Progress receives kind's progress lines and the backend's own; nil discards.
	Progress io.Writer
	// Profile adds kube-apiserver flags and feature gates, through
	// kubeadm's configuration (profilePatches); the flags kubeadm wires
	// itself are refused (managedFlags).
	Profile profile.Profile
	// EtcdLinks puts a fault proxy between each kube-apiserver and its etcd
	// member (cluster.EtcdLinks, linkEtcd): on the kind network's gateway,
	// with etcd's serving certificates reissued to carry its address.
	EtcdLinks bool
}

// Cluster is a running kind cluster.
type Cluster struct {
	name      string
	image     string
	ownImage  bool
	provider  *kindcluster.Provider
	d         *docker.Docker
	dir       string
	owner     *flock.Flock
	artifacts string
	progress  io.Writer
	profile   profile.Profile

	version    string // kube-apiserver's gitVersion
	server     string // https://127.0.0.1:<port>, the published port of the node or of the load balancer
	addr       string // 127.0.0.1:<port>
	apiservers int    // control-plane nodes
	// credMu guards the users' credentials, which RotateCertificates
	// replaces, and the kubeconfigs written of them.
	credMu          sync.Mutex
	admin           *rest.Config
	testUser        *rest.Config
	kubeconfig      map[cluster.User]string
	fileKubeconfigs int // FileKubeconfig's files so far, naming the next

	nodeMu  sync.Mutex
	cpNodes []nodes.Node // the control-plane nodes by name: apiserver i runs on cpNodes[i]
	cpAddrs []string     // <node IP>:6443 of each

	mu      sync.Mutex
	etcd    *clientv3.Client
	etcdTLS *tls.Config // etcd's client credentials, set with etcd
	// etcdLinks are the fault proxies between each kube-apiserver and
	// etcd (Options.EtcdLinks, LinkEtcd), by index; nil without them.
	// Complete once etcdLinked; Close closes what is there.
	etcdLinks  []*faultproxy.Proxy
	etcdLinked bool
	linkMu     sync.Mutex   // one LinkEtcd at a time
	stopped    map[int]bool // kube-apiservers stopped by StopAPIServer
	// down ends the faultlog window of a stopped or restarting
	// kube-apiserver, by index (absent when none is open).
	down map[int]func()
	// switched is the kube-apiserver version of each apiserver
	// SwitchAPIServer moved off the node image's, by index.
	switched map[int]string
	closed   bool

	// unregister ends the deletion of the cluster on parent death.
	unregister func()
}

// Start creates a kind cluster and returns when kube-apiserver is ready and
// the test user may do what informers under test need.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	if err := opts.Profile.Validate(managedFlags); err != nil {
		return nil, fmt.Errorf("start kind cluster: %w", err)
	}
	if opts.APIServers > MaxAPIServers {
		return nil, fmt.Errorf("kind cluster with %d kube-apiservers: at most %d", opts.APIServers, MaxAPIServers)
	}
	d, err := docker.New(ctx)
	if err != nil {
		return nil, err
	}
	if removed, err := ReapStale(ctx); err != nil {
		fmt.Fprintf(opts.Progress, "kind: removing stale clusters: %v\n", err)
	} else if len(removed) > 0 {
		fmt.Fprintf(opts.Progress, "kind: removed clusters left by dead runs: %s\n", strings.Join(removed, ", "))
	}
	image, own, err := resolveImage(ctx, d, opts)
	if err != nil {
		return nil, err
	}
	if err := ensureAdapter(ctx, d, image, opts); err != nil {
		return nil, err
	}
	if err := ensureNetwork(ctx, d); err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		name = NamePrefix + hex.EncodeToString(b)
	}
	dir, owner, err := newWorkDir(name)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		name: name, image: image, ownImage: own, d: d, dir: dir, owner: owner,
		artifacts: opts.ArtifactsDir, progress: opts.Progress, profile: opts.Profile, apiservers: max(opts.APIServers, 1),
		stopped: map[int]bool{}, down: map[int]func(){}, switched: map[int]string{},
		provider:   kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(newLogger(opts.Progress))),
		kubeconfig: map[cluster.User]string{},
	}
	if c.artifacts == "" {
		c.artifacts = filepath.Join(dir, "artifacts")
	}
	// Should the test process's parent die (lifetime.ExitWithParent), kind
	// deletes the cluster before the process exits; no lock of c is taken
	// (the running spec may hold it).
	c.unregister = lifetime.OnParentDeath("kind cluster "+name, func(context.Context) error {
		err := c.provider.Delete(name, filepath.Join(dir, "kind-kubeconfig"))
		_ = os.RemoveAll(dir)
		return err
	})
	defer func() {
		if err != nil {
			_ = c.Close(context.Background())
		}
	}()
	start := time.Now()
	if err := c.create(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(opts.Progress, "kind: cluster %s (image %s, control-plane nodes: %d) created in %s\n", name, image, c.apiservers, time.Since(start).Round(100*time.Millisecond))
	if err := c.checkProfile(ctx); err != nil {
		return nil, err
	}
	if err := c.connect(ctx); err != nil {
		return nil, c.withNodeLogs(ctx, err)
	}
	if opts.EtcdLinks {
		if err := c.LinkEtcd(ctx); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(opts.Progress, "kind: cluster %s ready in %s\n", name, time.Since(start).Round(100*time.Millisecond))
	return c, nil
}

// resolveImage picks the node image and says whether it is one the project built.
func resolveImage(ctx context.Context, d *docker.Docker, opts Options) (string, bool, error) {
	image := opts.Image
	if image == "" {
		image = os.Getenv(EnvNodeImage)
	}
	if image == "" {
		v, err := binaries.Versions{KubeAPIServer: opts.KubeVersion}.Normalize()
		if err != nil {
			return "", false, err
		}
		image = nodeimage.Tag(v.KubeAPIServer)
	}
	out, err := d.Run(ctx, nil, "image", "inspect", "--format", `{{index .Config.Labels "`+nodeimage.LabelOwner+`"}}`, image)
	if err != nil && strings.HasPrefix(image, nodeimage.Repository+":") {
		return "", false, fmt.Errorf("node image %s is not built: run `make kind-image` (builds it offline from pinned sources, ~15 min once), or set %s to a published kindest/node image", image, EnvNodeImage)
	}
	return image, err == nil && strings.TrimSpace(string(out)) == "kind-node", nil
}

var (
	adapterOnce sync.Once
	adapterErr  error
)

// ensureAdapter probes once per process whether the daemon can start
// privileged containers, and installs the restricted-host adapter if not.
func ensureAdapter(ctx context.Context, d *docker.Docker, image string, opts Options) error {
	adapterOnce.Do(func() {
		if !d.ImageExists(ctx, image) {
			// A published image not pulled yet: pull it now, so the probe
			// below runs the node image itself.
			if _, err := d.Run(ctx, nil, "pull", image); err != nil {
				adapterErr = fmt.Errorf("node image %s is not here and cannot be pulled: %w", image, err)
				return
			}
		}
		r, err := d.DetectRestricted(ctx, image)
		if err != nil {
			adapterErr = err
			return
		}
		if !r.Restricted {
			return
		}
		cache, err := binaries.CacheDir(opts.CacheDir)
		if err != nil {
			adapterErr = err
			return
		}
		a, err := d.InstallAdapter(ctx, filepath.Join(cache, "kind-docker-adapter"), image, r)
		if err != nil {
			adapterErr = err
			return
		}
		fmt.Fprintln(opts.Progress, a)
		if opts.Progress != os.Stderr {
			fmt.Fprintln(os.Stderr, a)
		}
	})
	return adapterErr
}

func ensureNetwork(ctx context.Context, d *docker.Docker) error {
	// kind's library reads its Docker network from the environment only
	// (pkg/cluster/internal/providers/docker/network.go).
	if err := processenv.Set("KIND_EXPERIMENTAL_DOCKER_NETWORK", NetworkName, "the kind backend"); err != nil {
		return err
	}
	if _, err := d.Run(ctx, nil, "network", "inspect", NetworkName); err == nil {
		return nil
	}
	_, err := d.Run(ctx, nil, "network", "create", "--label", nodeimage.LabelOwner+"=kind-network", NetworkName)
	if err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("create docker network %s: %w", NetworkName, err)
	}
	return nil
}

// config is the kind cluster configuration of c (renderConfig).
func (c *Cluster) config() (string, error) {
	return renderConfig(c.ownImage, c.d.CgroupV1(), c.apiservers, c.profile)
}

// renderConfig is the kind cluster configuration: apiservers control-plane
// nodes (with more than one kind adds its load balancer). With the
// project's own image (ownImage), what it does not carry is configured away
// (default CNI: a static ptp conflist is baked in; kube-proxy; CoreDNS). On
// cgroup v1 hosts the kubelet must be told to run anyway; the crash-loop
// back-off is capped at 1 s so a killed kube-apiserver comes back at once
// (KubeletCrashLoopBackOffMax, beta and on in 1.35+). The profile's flags
// and gates go to kube-apiserver through kubeadm's ClusterConfiguration
// (profilePatches).
func renderConfig(ownImage, cgroupV1 bool, apiservers int, p profile.Profile) (string, error) {
	patches, err := profilePatches(p)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\n")
	if ownImage {
		b.WriteString("networking:\n  disableDefaultCNI: true\n  kubeProxyMode: none\n")
	}
	b.WriteString("nodes:\n" + strings.Repeat("- role: control-plane\n", max(apiservers, 1)) + "kubeadmConfigPatches:\n")
	if ownImage {
		b.WriteString("- |\n  kind: InitConfiguration\n  skipPhases: [preflight, addon/coredns, addon/kube-proxy]\n")
	}
	b.WriteString("- |\n  kind: KubeletConfiguration\n  crashLoopBackOff:\n    maxContainerRestartPeriod: 1s\n")
	if cgroupV1 {
		b.WriteString("  failCgroupV1: false\n")
	}
	for _, patch := range patches {
		b.WriteString("- |\n")
		for _, line := range strings.SplitAfter(strings.TrimSuffix(patch, "\n"), "\n") {
			b.WriteString("  " + line)
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

// KindConfig is the kind configuration (v1alpha4) the cluster was created
// with: what its node image and this host need (the node image built here
// runs no CNI, kube-proxy or CoreDNS: their images cannot be pulled
// offline), and its profile's kube-apiserver flags.
func (c *Cluster) KindConfig() string {
	cfg, err := c.config()
	if err != nil {
		return "# " + err.Error() + "\n" // Start renders it first and fails on this error
	}
	return cfg
}

func (c *Cluster) create(ctx context.Context) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	if c.apiservers > 1 {
		// kind runs its load balancer image by one fixed name: kind's own
		// Envoy where Docker has it or can pull it, else the stand-in
		// lbimage builds, lent that name until kind has made the container.
		release, err := lbimage.Use(ctx, c.d, workRoot(), c.progress)
		if err != nil {
			return fmt.Errorf("%d control-plane nodes: %w", c.apiservers, err)
		}
		defer release()
	}
	if err := os.WriteFile(filepath.Join(c.dir, "kind-config.yaml"), []byte(cfg), 0o644); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, CreateTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- c.provider.Create(c.name,
			kindcluster.CreateWithRawConfig([]byte(cfg)),
			kindcluster.CreateWithNodeImage(c.image),
			kindcluster.CreateWithKubeconfigPath(filepath.Join(c.dir, "kind-kubeconfig")),
			kindcluster.CreateWithWaitForReady(ReadyTimeout),
			kindcluster.CreateWithRetain(true), // the logs are read before it is deleted
			kindcluster.CreateWithDisplayUsage(false),
			kindcluster.CreateWithDisplaySalutation(false),
		)
	}()
	select {
	case err := <-done:
		if err != nil {
			return c.withNodeLogs(ctx, fmt.Errorf("kind create cluster %s: %w", c.name, err))
		}
		return nil
	case <-ctx.Done():
		err := c.withNodeLogs(context.Background(), fmt.Errorf("kind create cluster %s did not finish within %s: %w", c.name, CreateTimeout, ctx.Err()))
		// Removing the nodes ends kind's pending docker exec, so Create returns.
		c.removeNodes()
		<-done
		return err
	}
}

// nodeName is the first control-plane node's container (kind's naming:
// <cluster>-control-plane, then -control-plane2, ...).
func (c *Cluster) nodeName() string { return c.name + "-control-plane" }

// removeNodes removes every container of the cluster (kind's cluster label).
func (c *Cluster) removeNodes() {
	out, _ := c.d.Run(context.Background(), nil, "ps", "-a", "-q", "--filter", "label=io.x-k8s.kind.cluster="+c.name)
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		_, _ = c.d.Run(context.Background(), nil, append([]string{"rm", "-f", "-v"}, ids...)...)
	}
}

// withNodeLogs adds the tails of the node's kubelet and containerd journals,
// of the last kube-apiserver container's log (where a flag of a profile
// that kube-apiserver refuses is named: kubeadm only says the apiserver
// never became healthy) and of the cluster's containers' own logs to err.
func (c *Cluster) withNodeLogs(ctx context.Context, err error) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var b strings.Builder
	for _, unit := range []string{"kubelet", "containerd"} {
		out, _ := c.d.Run(ctx, nil, "exec", c.nodeName(), "journalctl", "--no-pager", "-n", "25", "-u", unit)
		fmt.Fprintf(&b, "\n--- %s journal (last 25 lines) ---\n%s", unit, strings.TrimSpace(string(out)))
	}
	if ids, _ := c.d.Run(ctx, nil, "exec", c.nodeName(), "crictl", "ps", "-a", "-q", "--name", "kube-apiserver", "--latest"); len(strings.TrimSpace(string(ids))) > 0 {
		// The log file, not crictl logs: that writes the container's
		// stderr, where kube-apiserver logs, to its own stderr.
		id := strings.Fields(string(ids))[0]
		path, _ := c.d.Run(ctx, nil, "exec", c.nodeName(), "crictl", "inspect", "--output", "go-template", "--template", "{{.status.logPath}}", id)
		out, _ := c.d.Run(ctx, nil, "exec", c.nodeName(), "tail", "-n", "15", strings.TrimSpace(string(path)))
		fmt.Fprintf(&b, "\n--- kube-apiserver container log (last 15 lines) ---\n%s", strings.TrimSpace(string(out)))
	}
	names := []string{c.nodeName()}
	if c.apiservers > 1 {
		out, _ := c.d.Run(ctx, nil, "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster="+c.name, "--format", "{{.Names}}")
		if n := strings.Fields(string(out)); len(n) > 0 {
			names = n
			slices.Sort(names)
		}
	}
	for _, n := range names {
		out, _ := c.d.Run(ctx, nil, "logs", "--tail", "15", n)
		fmt.Fprintf(&b, "\n--- container %s log (last 15 lines) ---\n%s", n, strings.TrimSpace(string(out)))
	}
	if strings.Contains(b.String(), "Too many open files") {
		limit, _ := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
		fmt.Fprintf(&b, "\n--- hint ---\nsystemd in a node ran out of inotify instances: the host's fs.inotify.max_user_instances (%s) is shared by every node container of every kind cluster running (each takes about 20); run fewer at once, or raise it (kind's known issue: sysctl fs.inotify.max_user_instances=512)",
			strings.TrimSpace(string(limit)))
	}
	return fmt.Errorf("%w%s", err, b.String())
}

// connect reads the admin kubeconfig, waits for /readyz, issues the test
// user's certificate, grants it what informers need and installs the
// suite's CRDs.
func (c *Cluster) connect(ctx context.Context) error {
	raw, err := c.provider.KubeConfig(c.name, false)
	if err != nil {
		return fmt.Errorf("kind kubeconfig: %w", err)
	}
	c.admin, err = clientcmd.RESTConfigFromKubeConfig([]byte(raw))
	if err != nil {
		return fmt.Errorf("kind kubeconfig: %w", err)
	}
	c.server = c.admin.Host
	c.addr = strings.TrimPrefix(c.server, "https://")
	if err := c.waitReady(ctx); err != nil {
		return err
	}
	if _, err := c.controlPlanes(); err != nil {
		return err
	}
	for i := range c.apiservers {
		if err := c.waitReadyAt(ctx, i); err != nil {
			return err
		}
	}
	caCert, err := c.readNodeFile(ctx, "/etc/kubernetes/pki/ca.crt")
	if err != nil {
		return err
	}
	caKey, err := c.readNodeFile(ctx, "/etc/kubernetes/pki/ca.key")
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := cluster.IssueClientCert(caCert, caKey, string(cluster.TestUser), nil)
	if err != nil {
		return fmt.Errorf("issue the test user's certificate: %w", err)
	}
	c.testUser = rest.AnonymousClientConfig(c.admin)
	c.testUser.TLSClientConfig.CertData, c.testUser.TLSClientConfig.KeyData = certPEM, keyPEM
	cs, err := kubernetes.NewForConfig(c.admin)
	if err != nil {
		return err
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("kube-apiserver version: %w", err)
	}
	c.version = v.GitVersion
	if err := cluster.GrantTestUser(ctx, cs); err != nil {
		return err
	}
	return cluster.InstallCRDs(ctx, c.admin)
}

// CRDsInstalled implements cluster.CustomResources: connect installed them
// or failed.
func (c *Cluster) CRDsInstalled() error { return nil }

// controlPlanes are the control-plane nodes sorted by name (kind names them
// <cluster>-control-plane, -control-plane2, ...: apiserver i runs on the
// i-th), listed once (the polls of restarts run a command on a node every
// 100 ms), with the address of each one's kube-apiserver.
func (c *Cluster) controlPlanes() ([]nodes.Node, error) {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	if c.cpNodes != nil {
		return c.cpNodes, nil
	}
	all, err := c.provider.ListNodes(c.name)
	if err != nil {
		return nil, err
	}
	var cps []nodes.Node
	for _, n := range all {
		if role, err := n.Role(); err == nil && role == "control-plane" {
			cps = append(cps, n)
		}
	}
	slices.SortFunc(cps, func(a, b nodes.Node) int { return strings.Compare(a.String(), b.String()) })
	if len(cps) != c.apiservers {
		return nil, fmt.Errorf("kind cluster %s has %d control-plane nodes, want %d (was a container removed?)", c.name, len(cps), c.apiservers)
	}
	var addrs []string
	for _, n := range cps {
		ip, _, err := n.IP()
		if err != nil {
			return nil, fmt.Errorf("node %s IP: %w", n, err)
		}
		addrs = append(addrs, net.JoinHostPort(ip, "6443"))
	}
	c.cpNodes, c.cpAddrs = cps, addrs
	return cps, nil
}

func (c *Cluster) nodeAt(i int) (nodes.Node, error) {
	cps, err := c.controlPlanes()
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= len(cps) {
		return nil, fmt.Errorf("kind cluster %s has %d kube-apiservers, not %d", c.name, len(cps), i+1)
	}
	return cps[i], nil
}

// nodeExec runs a command on the first control-plane node.
func (c *Cluster) nodeExec(ctx context.Context, command string, args ...string) (string, error) {
	return c.nodeExecOn(ctx, 0, command, args...)
}

// nodeExecOn runs a command on control-plane node i through kind's node
// abstraction (docker exec, through the adapter when it is active).
func (c *Cluster) nodeExecOn(ctx context.Context, i int, command string, args ...string) (string, error) {
	return c.nodeRun(ctx, i, nil, command, args...)
}

// nodeRun is nodeExecOn with stdin (nil: none).
func (c *Cluster) nodeRun(ctx context.Context, i int, stdin io.Reader, command string, args ...string) (string, error) {
	n, err := c.nodeAt(i)
	if err != nil {
		return "", err
	}
	var out, errOut bytes.Buffer
	cmd := n.CommandContext(ctx, command, args...)
	if stdin != nil {
		cmd.SetStdin(stdin)
	}
	cmd.SetStdout(&out)
	cmd.SetStderr(&errOut)
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("on node %s: %s %s: %w: %s", n, command, strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

// readNodeFile reads a file of the first control-plane node.
func (c *Cluster) readNodeFile(ctx context.Context, path string) ([]byte, error) {
	return c.readNodeFileOn(ctx, 0, path)
}

// readNodeFileOn reads a file of control-plane node i.
func (c *Cluster) readNodeFileOn(ctx context.Context, i int, path string) ([]byte, error) {
	out, err := c.nodeExecOn(ctx, i, "cat", path)
	return []byte(out), err
}

// Name implements cluster.Cluster.
func (c *Cluster) Name() string { return "kind(" + c.name + ")" }

// KindName is the kind cluster's name (kind get clusters).
func (c *Cluster) KindName() string { return c.name }

// ServerVersion implements cluster.ServerVersioner.
func (c *Cluster) ServerVersion() string { return c.version }

// Image is the node image the cluster runs.
func (c *Cluster) Image() string { return c.image }

// RESTConfig implements cluster.Cluster.
func (c *Cluster) RESTConfig(u cluster.User) (*rest.Config, error) {
	c.credMu.Lock()
	defer c.credMu.Unlock()
	switch u {
	case cluster.Admin:
		return rest.CopyConfig(c.admin), nil
	case cluster.TestUser:
		return rest.CopyConfig(c.testUser), nil
	}
	return nil, fmt.Errorf("no credentials for user %q", u)
}

// RESTConfigFor is RESTConfig for a client reaching the apiserver at host (a
// fault proxy passing TLS through): the serving certificate is still checked,
// against the published address kind put in its SANs.
func (c *Cluster) RESTConfigFor(u cluster.User, host string) (*rest.Config, error) {
	cfg, err := c.RESTConfig(u)
	if err != nil {
		return nil, err
	}
	if cfg.TLSClientConfig.ServerName == "" {
		cfg.TLSClientConfig.ServerName = strings.Split(c.addr, ":")[0]
	}
	cfg.Host = host
	return cfg, nil
}

// APIServerAddrs implements cluster.Addressable. With one control-plane
// node: the published kube-apiserver port. With several: each node's own
// kube-apiserver at its container's IP, port 6443, as the host reaches the
// nodes' etcd (a stopped apiserver then refuses connections, as a local
// one does, where a published port's proxy would accept and close them);
// the load balancer is not among them. Every serving certificate covers
// the name RESTConfigFor verifies (127.0.0.1: kind's certSANs) and its own
// node's IP (kubeadm's advertise address).
func (c *Cluster) APIServerAddrs() []string {
	if c.apiservers <= 1 {
		return []string{c.addr}
	}
	if _, err := c.controlPlanes(); err != nil {
		return nil // connect listed them: only a removed container gets here
	}
	return slices.Clone(c.cpAddrs)
}

// KubeconfigPath implements cluster.Cluster.
func (c *Cluster) KubeconfigPath(u cluster.User) (string, error) {
	cfg, err := c.RESTConfig(u)
	if err != nil {
		return "", err
	}
	c.credMu.Lock()
	defer c.credMu.Unlock()
	if p, ok := c.kubeconfig[u]; ok {
		return p, nil
	}
	p := filepath.Join(c.dir, string(u)+".kubeconfig")
	if err := cluster.WriteKubeconfig(p, cfg, c.name); err != nil {
		return "", err
	}
	c.kubeconfig[u] = p
	return p, nil
}

// ArtifactsDir implements cluster.Cluster.
func (c *Cluster) ArtifactsDir() string { return c.artifacts }

// ExportLogs writes kind's log export of the cluster (journals, pod logs,
// container runtime state) into dir.
func (c *Cluster) ExportLogs(_ context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return c.provider.CollectLogs(c.name, dir)
}

// Close implements cluster.Cluster: kind deletes the cluster (node
// containers with their volumes); the owner lock and work directory go.
func (c *Cluster) Close(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	if c.etcd != nil {
		errs = append(errs, c.etcd.Close())
	}
	if err := c.provider.Delete(c.name, filepath.Join(c.dir, "kind-kubeconfig")); err != nil {
		errs = append(errs, fmt.Errorf("kind delete cluster %s: %w", c.name, err))
	}
	for _, l := range c.etcdLinks {
		if l != nil {
			errs = append(errs, l.Close())
		}
	}
	errs = append(errs, os.RemoveAll(c.dir))
	_ = c.owner.Unlock()
	if c.unregister != nil {
		c.unregister()
	}
	return errors.Join(errs...)
}

var (
	_ cluster.APIServerController = (*Cluster)(nil)
	_ cluster.APIServerUpgrader   = (*Cluster)(nil)
	_ cluster.EtcdCompactor       = (*Cluster)(nil)
	_ cluster.EtcdSnapshotter     = (*Cluster)(nil)
	_ cluster.CertRotator         = (*Cluster)(nil)
	_ cluster.Recoverer           = (*Cluster)(nil)
	_ cluster.Addressable         = (*Cluster)(nil)
	_ cluster.EtcdLinker          = (*Cluster)(nil)
)
