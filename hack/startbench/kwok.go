package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/internal/lines"
)

// kwokVersion of kwokctl (and the kwok controller), built from the module
// proxy into <cache>/tools/kwok/<version>/ once.
const kwokVersion = "v0.8.0"

// kwokRow is `kwokctl create cluster --runtime binary` on the benchmark's
// kube-apiserver and etcd (given as local files, which kwokctl symlinks
// instead of downloading), kube-controller-manager and kube-scheduler
// disabled, and the kwok controller disabled too unless controller. Each
// sample has a KWOK_WORKDIR of its own (clusters, cache, logs) under the
// run's temporary directory, and --kubeconfig pointing away from
// ~/.kube/config, which kwokctl would otherwise edit; stop is `kwokctl
// delete cluster`.
//
// kwokctl's binary runtime needs kubectl: after starting the processes it
// polls `kubectl get --raw /version` (every 200 ms) before it returns. It
// takes kubectl from PATH, else downloads it from dl.k8s.io, so prepare
// insists on one on PATH.
func kwokRow(e *env, name string, controller bool) starter {
	notes := "kwokctl create cluster --runtime binary --disable kube-controller-manager,kube-scheduler"
	if controller {
		notes += " --kwok-controller-binary (kwok's node simulator running too, not waited for)"
	} else {
		notes += ",kwok-controller"
	}
	notes += "; plain-HTTP etcd, default admission and Node,RBAC authz; create waits for `kubectl get --raw /version`; then delete cluster"
	var kwokctl, kwokController string
	return starter{
		name:  name,
		notes: notes,
		prepare: func(ctx context.Context) (err error) {
			if kwokctl, err = ensureKwokTool(ctx, "kwokctl"); err != nil {
				return err
			}
			if controller {
				if kwokController, err = ensureKwokTool(ctx, "kwok"); err != nil {
					return err
				}
			}
			kubectl, err := exec.LookPath("kubectl")
			if err != nil {
				return fmt.Errorf("kwokctl's binary runtime waits for the apiserver with `kubectl get --raw /version` and, with no kubectl on PATH, downloads one from dl.k8s.io (%w)", err)
			}
			fmt.Fprintf(os.Stderr, "%s: kwokctl %s; it will run kubectl %s\n", name, kwokctl, kubectl)
			return nil
		},
		start: func(ctx context.Context) (func(context.Context) error, error) {
			args := []string{"--kube-apiserver-binary", e.bins.KubeAPIServer, "--etcd-binary", e.bins.Etcd}
			if controller {
				args = append(args, "--kwok-controller-binary", kwokController,
					"--disable", "kube-controller-manager,kube-scheduler")
			} else {
				args = append(args, "--disable", "kube-controller-manager,kube-scheduler,kwok-controller")
			}
			return kwokStart(ctx, kwokctl, e.tmp, args...)
		},
	}
}

var kwokClusters atomic.Int64

// kwokStart creates a binary-runtime kwok cluster in a new work directory
// under tmp, with the extra create flags args, and waits for it.
func kwokStart(ctx context.Context, kwokctl, tmp string, args ...string) (func(context.Context) error, error) {
	work, err := os.MkdirTemp(tmp, "kwok-")
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("startbench-%d-%d", os.Getpid(), kwokClusters.Add(1))
	clusterDir := filepath.Join(work, "clusters", name)
	environ := append(os.Environ(), "KWOK_WORKDIR="+work)
	kwok := func(ctx context.Context, args ...string) error {
		cmd := exec.CommandContext(ctx, kwokctl, args...)
		cmd.Env = environ
		cmd.Dir = work
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("kwokctl %s: %w: %s", strings.Join(args[:2], " "), err, tail(out.String(), 5))
		}
		return nil
	}
	stop := func(ctx context.Context) error {
		// kwokctl forks the components detached (setsid) and keeps their
		// pids in files that delete removes: note them first, to kill
		// whatever delete leaves running.
		procs := kwokProcs(clusterDir)
		// Not --kubeconfig= as for create: delete rejects an empty path.
		err := kwok(ctx, "delete", "cluster", "--name", name, "--kubeconfig", filepath.Join(work, "unused-kubeconfig"))
		err = errors.Join(err, reap(ctx, procs))
		return errors.Join(err, os.RemoveAll(work))
	}
	create := append([]string{"create", "cluster", "--name", name, "--runtime", "binary",
		"--kubeconfig=", "--quiet-pull", "--timeout", readyTimeout.String()}, args...)
	if err := kwok(ctx, create...); err != nil {
		return stop, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(clusterDir, "kubeconfig.yaml"))
	if err != nil {
		return stop, err
	}
	return stop, waitReady(ctx, cfg)
}

// kwokProcs are the running processes whose pids kwokctl wrote under
// clusterDir/pids, with their command lines (to not kill a reused pid).
func kwokProcs(clusterDir string) map[int]string {
	procs := map[int]string{}
	files, _ := filepath.Glob(filepath.Join(clusterDir, "pids", "*.pid"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			continue
		}
		if cmdline := procCmdline(pid); cmdline != "" {
			procs[pid] = cmdline
		}
	}
	return procs
}

func procCmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return string(b) // empty for a zombie or a gone process
}

// reap waits up to 5 s for procs to be gone, then kills the rest; an error
// says which ones delete left behind.
func reap(ctx context.Context, procs map[int]string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		alive := 0
		for pid, cmdline := range procs {
			if procCmdline(pid) == cmdline {
				alive++
			}
		}
		if alive == 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	var left []string
	for pid, cmdline := range procs {
		if procCmdline(pid) == cmdline {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			left = append(left, fmt.Sprintf("%d (%s)", pid, filepath.Base(strings.SplitN(cmdline, "\x00", 2)[0])))
		}
	}
	return fmt.Errorf("kwokctl delete left running, killed: %s", strings.Join(left, ", "))
}

// ensureKwokTool returns sigs.k8s.io/kwok/cmd/<name>@kwokVersion, built
// with `go install` from the module proxy into the tools cache once.
func ensureKwokTool(ctx context.Context, name string) (string, error) {
	root, err := binaries.CacheDir("")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "tools", "kwok", kwokVersion)
	path := filepath.Join(dir, name)
	if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// Into a directory of its own, then renamed: a concurrent or
	// interrupted build leaves no half-written binary at path.
	gobin, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(gobin)
	pkg := "sigs.k8s.io/kwok/cmd/" + name + "@" + kwokVersion
	fmt.Fprintf(os.Stderr, "building %s into %s (once; a few minutes)\n", pkg, dir)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "install", "-trimpath", pkg)
	cmd.Dir = gobin // outside any module
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOWORK=off")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go install %s: %w", pkg, err)
	}
	if err := os.Rename(filepath.Join(gobin, name), path); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "built %s in %s\n", name, time.Since(start).Round(time.Second))
	return path, nil
}

func tail(s string, n int) string { return lines.OnOneLine(s, n) }
