package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/informer-conformance/informer-conformance/internal/processenv"
)

// capNames are the Linux capabilities by bit number (linux/capability.h),
// as docker --cap-add spells them. Which of them a host has is read from the
// daemon's bounding set at run time, never assumed.
var capNames = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
	"IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
	"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
	"LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
	"WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
}

// NodeDevices are the host devices a kind node uses that --privileged would
// have given it: fuse (fuse-overlayfs snapshotter), kmsg (the kubelet's OOM
// watcher), tun and loop-control where the host has them.
var NodeDevices = []string{"/dev/fuse", "/dev/kmsg", "/dev/net/tun", "/dev/loop-control"}

// LabelOwner marks every image, container, network and volume this project
// makes; kind-clean removes what carries it and nothing else.
const LabelOwner = "io.informer-conformance.owner"

// OwnerProbe is the owner label's value on the containers that probe the
// daemon (removed by --rm; labelled so a killed probe is found).
const OwnerProbe = "probe"

// unableToApplyCaps is runc's error for a privileged container on a daemon
// whose bounding set lacks some capability.
const unableToApplyCaps = "unable to apply caps"

// Restriction says whether this host's daemon refuses privileged containers.
type Restriction struct {
	// Restricted is true when `docker run --privileged` failed with runc's
	// "unable to apply caps".
	Restricted bool
	// Evidence is the probe's command and what it answered.
	Evidence string
}

// DetectRestricted runs `docker run --rm --privileged --entrypoint /bin/true
// image` with a local image. Only runc's "unable to apply caps" counts as a
// restricted host; any other failure is returned as an error.
func (d *Docker) DetectRestricted(ctx context.Context, image string) (Restriction, error) {
	args := []string{"run", "--rm", "--privileged", "--label", LabelOwner + "=" + OwnerProbe, "--entrypoint", "/bin/true", image}
	_, err := d.Run(ctx, nil, args...)
	probe := "docker " + strings.Join(args, " ")
	if err == nil {
		return Restriction{Evidence: probe + ": ok"}, nil
	}
	if strings.Contains(err.Error(), unableToApplyCaps) {
		return Restriction{Restricted: true, Evidence: probe + ": " + err.Error()}, nil
	}
	return Restriction{}, fmt.Errorf("probe for privileged containers failed for another reason than %q: %w", unableToApplyCaps, err)
}

// BoundingSet returns the capability bounding set of the Docker daemon
// (CapBnd of the dockerd process), or, when no dockerd process is visible
// (a remote daemon), of this process, with where it was read.
func BoundingSet() (uint64, string, error) {
	procs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, comm := range procs {
		b, err := os.ReadFile(comm)
		if err != nil || strings.TrimSpace(string(b)) != "dockerd" {
			continue
		}
		status := filepath.Join(filepath.Dir(comm), "status")
		if v, err := capBnd(status); err == nil {
			return v, status + " (dockerd)", nil
		}
	}
	v, err := capBnd("/proc/self/status")
	return v, "/proc/self/status (no dockerd process visible)", err
}

func capBnd(status string) (uint64, error) {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("%s has no CapBnd line", status)
}

// CapAddArgs turns a bounding set into --cap-add flags, one per capability
// in it, and names the capabilities missing from it.
func CapAddArgs(bnd uint64) (args, missing []string) {
	for bit, name := range capNames {
		if bnd&(1<<uint(bit)) != 0 {
			args = append(args, "--cap-add", name)
		} else {
			missing = append(missing, "CAP_"+name)
		}
	}
	return args, missing
}

// ExplicitPrivileged is what the adapter puts in place of --privileged on
// `docker run` and `docker create`: every capability of the bounding set,
// seccomp, AppArmor and the masked/read-only /proc paths unconfined, every
// device allowed by the device cgroup, and the node's devices present on this
// host.
func ExplicitPrivileged(bnd uint64, unknown map[string]bool) []string {
	var args []string
	caps, _ := CapAddArgs(bnd)
	for i := 1; i < len(caps); i += 2 {
		if !unknown[caps[i]] {
			args = append(args, "--cap-add", caps[i])
		}
	}
	args = append(args,
		"--security-opt", "seccomp=unconfined",
		"--security-opt", "apparmor=unconfined",
		"--security-opt", "systempaths=unconfined",
		"--device-cgroup-rule", "a *:* rwm",
	)
	for _, dev := range NodeDevices {
		if _, err := os.Stat(dev); err == nil {
			args = append(args, "--device", dev)
		}
	}
	return args
}

// wrapperScript is the `docker` the adapter puts first on PATH. It rewrites
// the --privileged flag of run/create (into the explicit flags) and of exec
// (dropped: an exec'd process gets the container's capabilities, which are
// already every one of the bounding set). One more rewrite keeps the host
// untouched: kind mounts /lib/modules read-only, and where the host has no
// /lib/modules the daemon would create it on the host, so the mount's source
// becomes an empty directory of the adapter's own. Every other argument
// passes through unchanged, to the real docker.
const wrapperScript = `#!/usr/bin/env bash
# informer-conformance restricted-host docker adapter (generated by
# cluster/kind/docker; see docs/backends.md "kind on restricted hosts"). The daemon
# cannot start --privileged containers (%s), so --privileged becomes its
# explicit equivalent. Everything else goes to the real docker unchanged.
real=%q
explicit=(%s)
modules=%q
out=()
sub=""
for a in "$@"; do
  if [[ -z $sub && $a != -* ]]; then
    sub=$a
  elif [[ $a == --privileged ]]; then
    case $sub in
      run|create) out+=("${explicit[@]}"); continue ;;
      exec) continue ;;
    esac
  elif [[ $a == /lib/modules:/lib/modules:ro && ! -d /lib/modules && ($sub == run || $sub == create) ]]; then
    a="$modules:/lib/modules:ro"
  fi
  out+=("$a")
done
exec "$real" "${out[@]}"
`

// wrapperScriptFor fills in wrapperScript.
func wrapperScriptFor(why, realDocker string, explicit []string, modules string) string {
	var quoted []string
	for _, a := range explicit {
		quoted = append(quoted, strconv.Quote(a))
	}
	return fmt.Sprintf(wrapperScript, why, realDocker, strings.Join(quoted, " "), modules)
}

// Adapter is an installed wrapper.
type Adapter struct {
	// Dir is the directory put first on PATH; it holds the wrapper `docker`.
	Dir string
	// Why is the evidence that made it necessary.
	Why string
	// Missing are the capabilities the daemon's bounding set lacks.
	Missing []string
	// Unknown are capabilities of the bounding set the daemon has no name
	// for (an older Docker), which it therefore cannot grant either.
	Unknown []string
	// Source is where the bounding set was read.
	Source string
}

var (
	pathMu sync.Mutex
)

// InstallAdapter writes the wrapper into dir and puts dir first on this
// process's PATH (kind looks docker up there at every command). It changes
// nothing outside dir and this process's environment.
func (d *Docker) InstallAdapter(ctx context.Context, dir, image string, why Restriction) (*Adapter, error) {
	bnd, source, err := BoundingSet()
	if err != nil {
		return nil, fmt.Errorf("read the Docker daemon's capability bounding set: %w", err)
	}
	_, missing := CapAddArgs(bnd)
	modules := filepath.Join(dir, "empty-lib-modules")
	if err := os.MkdirAll(modules, 0o755); err != nil {
		return nil, err
	}
	// Try the explicit flags on the node image before kind uses them; a
	// capability the daemon has no name for is left out (it cannot grant it).
	unknown := map[string]bool{}
	var unknownList []string
	for range capNames {
		args := append([]string{"run", "--rm", "--label", LabelOwner + "=" + OwnerProbe}, ExplicitPrivileged(bnd, unknown)...)
		_, err := d.Run(ctx, nil, append(args, "--entrypoint", "/bin/true", image)...)
		if err == nil {
			break
		}
		m := unknownCapRE.FindStringSubmatch(err.Error())
		if m == nil {
			return nil, fmt.Errorf("the restricted-host adapter's flags do not start a container either: %w", err)
		}
		name := strings.TrimPrefix(m[1], "CAP_")
		if unknown[name] {
			return nil, err
		}
		unknown[name] = true
		unknownList = append(unknownList, "CAP_"+name)
	}
	script := wrapperScriptFor(strings.Join(missing, ", ")+" missing", d.Bin, ExplicitPrivileged(bnd, unknown), modules)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, fmt.Sprintf(".docker.%d.tmp", os.Getpid()))
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "docker")); err != nil {
		return nil, err
	}
	pathMu.Lock()
	defer pathMu.Unlock()
	path := os.Getenv("PATH")
	if !strings.HasPrefix(path, dir+string(os.PathListSeparator)) {
		// kind's library runs "docker" from PATH: the adapter's comes first.
		if err := processenv.Set("PATH", dir+string(os.PathListSeparator)+path, "the kind backend's Docker adapter ("+dir+")"); err != nil {
			return nil, err
		}
	}
	return &Adapter{Dir: dir, Why: why.Evidence, Missing: missing, Unknown: unknownList, Source: source}, nil
}

var unknownCapRE = regexp.MustCompile(`unknown capability: "?(CAP_[A-Z_]+)`)

// String is the one log line that says the adapter is active and why.
func (a *Adapter) String() string {
	unknown := ""
	if len(a.Unknown) > 0 {
		unknown = " (less " + strings.Join(a.Unknown, ", ") + ", which this daemon has no name for)"
	}
	return fmt.Sprintf("kind: restricted-host docker adapter active (%s/docker first on PATH): the Docker daemon's capability bounding set (%s) lacks %s, so privileged containers fail (%s); kind's --privileged becomes every capability of the bounding set%s, seccomp/apparmor/systempaths unconfined, device cgroup rule 'a *:* rwm' and the node devices",
		a.Dir, a.Source, strings.Join(a.Missing, ", "), strings.TrimSpace(a.Why), unknown)
}
