// Package docker runs the docker CLI for the kind backend and its node image
// build, and holds the restricted-host adapter: on a host whose Docker daemon
// cannot start privileged containers it puts a small `docker` wrapper first on
// the PATH of this process, so kind's own Go code (which runs the `docker` it
// finds on PATH) gets the explicit equivalent of --privileged.
//
// Plain Go that returns errors.
package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Docker is the docker CLI with a daemon that answers.
type Docker struct {
	Bin           string
	ServerVersion string
	CgroupVersion string
}

// New finds the docker CLI and checks that its daemon answers.
func New(ctx context.Context) (*Docker, error) {
	bin, err := exec.LookPath("docker")
	if err != nil {
		return nil, errors.New("Docker is not installed (no docker on PATH): the kind backend and its node image need Docker; install it, or use BACKEND=local")
	}
	d := &Docker{Bin: bin}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := d.Run(ctx, nil, "info", "--format", "{{.ServerVersion}} {{.CgroupVersion}}")
	if err != nil {
		return nil, fmt.Errorf("the Docker daemon does not answer (is it running, and may this user use it?): %w", err)
	}
	f := strings.Fields(string(out))
	if len(f) == 0 || f[0] == "" {
		return nil, fmt.Errorf("the Docker daemon does not answer: docker info printed %q", out)
	}
	d.ServerVersion = f[0]
	if len(f) > 1 {
		d.CgroupVersion = f[1]
	}
	return d, nil
}

// Run runs docker with args, stdin from in (may be nil), and returns its
// standard output; an error carries the command and its standard error.
func (d *Docker) Run(ctx context.Context, in io.Reader, args ...string) ([]byte, error) {
	return d.RunEnv(ctx, nil, in, args...)
}

// RunEnv is Run with extra environment variables for the docker CLI.
func (d *Docker) RunEnv(ctx context.Context, env []string, in io.Reader, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, d.Bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdin = in
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("docker %s: %w: %s", shortArgs(args), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func shortArgs(args []string) string {
	s := strings.Join(args, " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// ImageExists reports whether the daemon has image ref.
func (d *Docker) ImageExists(ctx context.Context, ref string) bool {
	_, err := d.Run(ctx, nil, "image", "inspect", "--format", "{{.Id}}", ref)
	return err == nil
}

// CgroupV1 reports a cgroup v1 host (the kubelet then needs failCgroupV1: false).
func (d *Docker) CgroupV1() bool { return d.CgroupVersion == "1" }
