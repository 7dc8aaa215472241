package docker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCapAddArgsFollowTheBoundingSet(t *testing.T) {
	// This machine's dockerd: everything up to cap 40 except CAP_SYS_RESOURCE.
	args, missing := CapAddArgs(0x000001fffeffffff)
	if len(missing) != 1 || missing[0] != "CAP_SYS_RESOURCE" {
		t.Fatalf("missing = %v, want [CAP_SYS_RESOURCE]", missing)
	}
	if len(args) != 2*40 || strings.Contains(strings.Join(args, " "), "SYS_RESOURCE") {
		t.Fatalf("%d args (want 80), without SYS_RESOURCE: %v", len(args), args)
	}
	// A full set asks for all 41 and misses none.
	if args, missing := CapAddArgs(1<<41 - 1); len(args) != 82 || len(missing) != 0 {
		t.Fatalf("full set: %d args, missing %v", len(args), missing)
	}
}

func TestExplicitPrivilegedLeavesOutUnknownNames(t *testing.T) {
	got := strings.Join(ExplicitPrivileged(1<<41-1, map[string]bool{"BPF": true}), " ")
	for _, want := range []string{"--cap-add SYS_ADMIN", "seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined", "--device-cgroup-rule a *:* rwm"} {
		if !strings.Contains(got, want) {
			t.Errorf("explicit flags lack %q: %s", want, got)
		}
	}
	if strings.Contains(got, "BPF") {
		t.Errorf("a capability the daemon has no name for is still asked for: %s", got)
	}
}

// TestWrapperRewritesOnlyPrivileged runs the generated wrapper in front of a
// fake docker that prints its arguments.
func TestWrapperRewritesOnlyPrivileged(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "real-docker")
	if err := os.WriteFile(fake, []byte("#!/usr/bin/env bash\nprintf '%s\\n' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	modules := filepath.Join(dir, "empty-lib-modules")
	script := wrapperScriptFor("CAP_SYS_RESOURCE missing", fake, []string{"--cap-add", "CHOWN", "--device-cgroup-rule", "a *:* rwm"}, modules)
	wrapper := filepath.Join(dir, "docker")
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) []string {
		out, err := exec.Command(wrapper, args...).Output()
		if err != nil {
			t.Fatalf("wrapper %v: %v", args, err)
		}
		return strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	}
	got := run("run", "--name", "n", "--privileged", "--security-opt", "seccomp=unconfined", "img")
	want := []string{"run", "--name", "n", "--cap-add", "CHOWN", "--device-cgroup-rule", "a *:* rwm", "--security-opt", "seccomp=unconfined", "img"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("run:\n got %q\nwant %q", got, want)
	}
	got = run("exec", "--privileged", "-i", "node", "cat", "/kind/version")
	want = []string{"exec", "-i", "node", "cat", "/kind/version"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("exec:\n got %q\nwant %q", got, want)
	}
	// Other commands, and arguments with spaces, pass unchanged.
	got = run("inspect", "--format", "{{.State.Status}} x", "--privileged")
	want = []string{"inspect", "--format", "{{.State.Status}} x", "--privileged"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("inspect:\n got %q\nwant %q", got, want)
	}
	if _, err := os.Stat("/lib/modules"); err != nil {
		got = run("run", "--volume", "/lib/modules:/lib/modules:ro", "img")
		if got[2] != modules+":/lib/modules:ro" {
			t.Errorf("without a host /lib/modules the mount's source is not the adapter's empty directory: %q", got)
		}
	}
}
