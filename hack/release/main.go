// Command release releases every module a user fetches from this
// repository at one version, and checks before tagging that each builds
// from the released versions alone (GOWORK=off, no replace, only what a
// module proxy serves):
//
//	go run ./hack/release -version v0.4.0 -proxy DIR   # publish into a file-based module proxy, check; no tag
//	go run ./hack/release -version v0.4.0 -tag         # the same check, then commit and tag here
//
// The modules: the suite (the repository's root) and the integrations
// (integrations/e2eframework, integrations/controllerruntime). In this
// repository they reach one another through go.work files; their go.mod
// files require one another at v0.0.0, which no proxy serves. A release
// writes the version into those requirements (go mod edit, then go mod
// tidy against the modules just published), commits that, makes each
// module's zip from the commit as the Go module proxy makes it from the
// tag (golang.org/x/mod/zip CreateFromVCS), publishes them into a
// file-based proxy (module/@v/list, .info, .mod, .zip) and builds every
// package of each module in a fresh module that fetches it from there
// (GOPROXY=file://DIR then the usual proxy for everything else, GONOSUMDB
// for this repository's modules, which no checksum database knows yet).
//
// Without -tag the commit is made in a scratch copy of the working tree's
// tracked files, so uncommitted changes are released too and nothing here
// changes; -proxy keeps the proxy (else a temporary one). With -tag the
// working tree must be clean: the commit lands on the current branch and
// each module gets its tag (v0.4.0, integrations/e2eframework/v0.4.0, ...);
// pushing them is left to the caller (printed).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

// suitePath is the suite's module path, the prefix of every released
// module's path.
const suitePath = "github.com/informer-conformance/informer-conformance"

// released are the directories of the modules a user fetches, the suite
// first: each later one may require the ones before it.
var released = []string{".", "integrations/e2eframework", "integrations/controllerruntime"}

// goTimeout bounds each go command (a go mod tidy or a build that fetches
// from the network).
const goTimeout = 15 * time.Minute

func main() {
	version := flag.String("version", "", "the version to release, e.g. v0.4.0 (semantic, with the leading v)")
	proxy := flag.String("proxy", "", "publish into this file-based module proxy directory (created; kept); default a temporary one")
	tag := flag.Bool("tag", false, "commit the go.mod changes on the current branch and tag each module (the working tree must be clean)")
	tidy := flag.Bool("tidy", false, "instead: go mod tidy every nested module of this repository against the working tree's modules (their go.mod files require them at v0.0.0)")
	flag.Parse()
	var err error
	if *tidy {
		err = tidyNested(context.Background())
	} else {
		err = run(context.Background(), *version, *proxy, *tag)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, version, proxy string, tag bool) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version || semver.Build(version) != "" {
		return fmt.Errorf("-version %q: want a semantic version such as v0.4.0 or v0.4.0-rc.1", version)
	}
	repo, err := output(ctx, ".", nil, "git", "rev-parse", "--show-toplevel")
	if err != nil {
		return fmt.Errorf("find the repository: %w", err)
	}
	repo = strings.TrimSpace(repo)
	if tag {
		if st, err := output(ctx, repo, nil, "git", "status", "--porcelain"); err != nil || st != "" {
			return fmt.Errorf("-tag needs a clean working tree (git status --porcelain: %q, %v)", st, err)
		}
	}
	if proxy == "" {
		dir, err := os.MkdirTemp("", "informer-conformance-proxy-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		proxy = dir
	} else if proxy, err = filepath.Abs(proxy); err != nil {
		return err
	}
	work := repo
	if !tag {
		scratch, err := os.MkdirTemp("", "informer-conformance-release-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(scratch)
		if err := copyTracked(ctx, repo, scratch); err != nil {
			return fmt.Errorf("copy the working tree's tracked files: %w", err)
		}
		work = scratch
	}
	env := proxyEnv(proxy)
	published, err := publishAll(ctx, work, version, proxy, env, false)
	if err != nil {
		return err
	}
	for _, m := range published {
		if err := check(ctx, m, env); err != nil {
			return fmt.Errorf("check %s from the proxy: %w", m, err)
		}
		fmt.Printf("checked: every package of %s builds from the proxy (GOWORK=off, no replace)\n", m)
	}
	if !tag {
		fmt.Printf("not tagged (no -tag); module proxy: GOPROXY=file://%s GONOSUMDB=%s\n", proxy, suitePath)
		return nil
	}
	var tags []string
	for i, dir := range released {
		t := version
		if dir != "." {
			t = dir + "/" + version
		}
		if _, err := output(ctx, repo, nil, "git", "tag", "-a", t, "-m", published[i].String()); err != nil {
			return fmt.Errorf("tag %s: %w", t, err)
		}
		tags = append(tags, t)
	}
	fmt.Printf("tagged %s; push with: git push origin HEAD %s\n", strings.Join(tags, " "), strings.Join(tags, " "))
	return nil
}

// tidyNested runs go mod tidy in every nested module of the repository
// that requires the suite's modules, as a user's go command would see
// them (GOWORK=off): go mod tidy reads no go.work, and no proxy serves
// v0.0.0, the version those go.mod files require between releases. So the
// working tree's released modules are published at v0.0.0 into a
// temporary proxy first; the go.sum lines of this repository's modules
// are dropped after (they hash the working tree, which go.work serves).
func tidyNested(ctx context.Context) error {
	repo, err := output(ctx, ".", nil, "git", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	repo = strings.TrimSpace(repo)
	proxy, err := os.MkdirTemp("", "informer-conformance-proxy-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(proxy)
	scratch, err := os.MkdirTemp("", "informer-conformance-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	if err := copyTracked(ctx, repo, scratch); err != nil {
		return err
	}
	env := proxyEnv(proxy)
	// Published at a version of its own, new at each call: the go command
	// never asks again for a version its module cache (and the module index
	// in its build cache) holds, so a v0.0.0 published anew would be read as
	// it was the first time. The go.mod files go back to v0.0.0 after.
	dev := "v0.0.0-tidy." + time.Now().UTC().Format("20060102150405")
	if _, err := publishAll(ctx, scratch, dev, proxy, env, true); err != nil {
		return err
	}
	list, err := output(ctx, repo, nil, "git", "ls-files", "*/go.mod")
	if err != nil {
		return err
	}
	for _, gomod := range strings.Fields(list) {
		dir := filepath.Join(repo, filepath.Dir(gomod))
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil {
			return err
		}
		if !bytes.Contains(data, []byte(suitePath+" ")) && !bytes.Contains(data, []byte(suitePath+"/integrations/")) {
			continue // requires none of the suite's modules
		}
		if err := requireSuite(ctx, dir, dev); err != nil {
			return err
		}
		if _, err := output(ctx, dir, env, "go", "mod", "tidy"); err != nil {
			return fmt.Errorf("tidy %s: %w", gomod, err)
		}
		if err := requireSuite(ctx, dir, "v0.0.0"); err != nil {
			return err
		}
		if err := dropSums(filepath.Join(dir, "go.sum")); err != nil {
			return err
		}
		fmt.Println("tidied", gomod)
	}
	return nil
}

// requireSuite sets the version of every requirement of the suite's
// modules in dir's go.mod.
func requireSuite(ctx context.Context, dir, version string) error {
	path := filepath.Join(dir, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		return err
	}
	for _, r := range f.Require {
		if r.Mod.Path == suitePath || strings.HasPrefix(r.Mod.Path, suitePath+"/") {
			if _, err := output(ctx, dir, []string{"GOWORK=off"}, "go", "mod", "edit", "-require="+r.Mod.Path+"@"+version); err != nil {
				return err
			}
		}
	}
	return nil
}

// dropSums removes the suite's modules from a go.sum.
func dropSums(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var keep []string
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if p, _, _ := strings.Cut(l, " "); p == suitePath || strings.HasPrefix(p, suitePath+"/") {
			continue
		}
		keep = append(keep, l)
	}
	return os.WriteFile(path, []byte(strings.Join(keep, "")), 0o644)
}

// publishAll prepares each released module of work at version (tidying
// the nested ones even when their requirements already name it, if
// tidyNested), commits its go.mod (the zip is made from the commit, as the
// proxy makes it from the tag) and publishes it into proxy, the suite
// first: each later module is tidied against the ones before it.
func publishAll(ctx context.Context, work, version, proxy string, env []string, tidyNested bool) ([]module.Version, error) {
	var published []module.Version
	for _, dir := range released {
		m, err := prepare(ctx, work, dir, version, env, tidyNested && dir != ".")
		if err != nil {
			return nil, fmt.Errorf("module %s: %w", dir, err)
		}
		if err := commit(ctx, work, fmt.Sprintf("release %s: %s requires this repository's modules at %s", version, m.Path, version)); err != nil {
			return nil, err
		}
		if err := publish(ctx, work, dir, m, proxy); err != nil {
			return nil, fmt.Errorf("publish %s: %w", m, err)
		}
		fmt.Printf("published %s into %s\n", m, proxy)
		published = append(published, m)
	}
	return published, nil
}

// prepare writes version into dir's requirements of the modules released
// before it and tidies its go.mod and go.sum against the proxy (GOWORK=off:
// what a user's go command sees), returning dir's module.
func prepare(ctx context.Context, work, dir, version string, env []string, force bool) (module.Version, error) {
	path := filepath.Join(work, dir, "go.mod")
	data, err := os.ReadFile(path)
	if err != nil {
		return module.Version{}, err
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		return module.Version{}, err
	}
	if f.Module == nil || (dir == "." && f.Module.Mod.Path != suitePath) || !strings.HasPrefix(f.Module.Mod.Path, suitePath) {
		return module.Version{}, fmt.Errorf("%s: not a module of %s", path, suitePath)
	}
	if len(f.Replace) > 0 {
		return module.Version{}, fmt.Errorf("%s has a replace directive: a go.mod users fetch has none (go.work files are for this repository)", path)
	}
	changed := false
	for _, r := range f.Require {
		if strings.HasPrefix(r.Mod.Path, suitePath) && r.Mod.Version != version {
			if err := f.AddRequire(r.Mod.Path, version); err != nil {
				return module.Version{}, err
			}
			changed = true
		}
	}
	if changed || force {
		out, err := f.Format()
		if err != nil {
			return module.Version{}, err
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return module.Version{}, err
		}
		if _, err := output(ctx, filepath.Join(work, dir), env, "go", "mod", "tidy"); err != nil {
			return module.Version{}, err
		}
	} else if _, err := output(ctx, filepath.Join(work, dir), env, "go", "mod", "tidy", "-diff"); err != nil {
		return module.Version{}, fmt.Errorf("go.mod or go.sum is not tidy (GOWORK=off): %w", err)
	}
	return module.Version{Path: f.Module.Mod.Path, Version: version}, nil
}

// publish writes m, made from dir at the work tree's HEAD, into the
// file-based proxy: $proxy/<escaped path>/@v/{list,<v>.info,<v>.mod,<v>.zip}.
func publish(ctx context.Context, work, dir string, m module.Version, proxy string) error {
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	at := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	var zip bytes.Buffer
	subdir := ""
	if dir != "." {
		subdir = dir
	}
	if err := modzip.CreateFromVCS(&zip, m, work, "HEAD", subdir); err != nil {
		return fmt.Errorf("zip: %w", err)
	}
	gomod, err := os.ReadFile(filepath.Join(work, dir, "go.mod"))
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{m.Version + ".zip": zip.Bytes(), m.Version + ".mod": gomod, m.Version + ".info": info} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			return err
		}
	}
	list, err := os.ReadFile(filepath.Join(at, "list"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(list))
	if !slices.Contains(versions, m.Version) {
		versions = append(versions, m.Version)
	}
	semver.Sort(versions)
	return os.WriteFile(filepath.Join(at, "list"), []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}

// check builds every package of m in a fresh module that requires m alone,
// fetched from the proxy as a user's go get fetches it.
func check(ctx context.Context, m module.Version, env []string) error {
	dir, err := os.MkdirTemp("", "informer-conformance-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	steps := [][]string{
		{"go", "mod", "init", "example.com/releasecheck"},
		{"go", "get", m.String()},
		{"go", "build", m.Path + "/..."},
	}
	for _, s := range steps {
		if _, err := output(ctx, dir, env, s...); err != nil {
			return err
		}
	}
	return nil
}

// proxyEnv is the environment of a go command that sees only released
// versions: no workspace, the file-based proxy first (this repository's
// modules), then the usual proxy for everything else.
func proxyEnv(proxy string) []string {
	upstream := strings.TrimSpace(os.Getenv("GOPROXY"))
	if upstream == "" {
		upstream = "https://proxy.golang.org,direct"
	}
	return []string{
		"GOWORK=off",
		"GOFLAGS=-mod=mod",
		"GOPRIVATE=",
		"GOPROXY=file://" + filepath.ToSlash(proxy) + "," + upstream,
		"GONOSUMDB=" + suitePath,
	}
}

// copyTracked copies the files git tracks in repo (as they are in the
// working tree) into dst and commits them there.
func copyTracked(ctx context.Context, repo, dst string) error {
	list, err := output(ctx, repo, nil, "git", "ls-files", "-z", "--cached")
	if err != nil {
		return err
	}
	for _, name := range strings.Split(strings.TrimRight(list, "\x00"), "\x00") {
		src := filepath.Join(repo, name)
		fi, err := os.Lstat(src)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		if err := copyFile(src, filepath.Join(dst, name), fi.Mode().Perm()); err != nil {
			return err
		}
	}
	for _, c := range [][]string{{"git", "init", "-q"}, {"git", "add", "-A"}} {
		if _, err := output(ctx, dst, nil, c...); err != nil {
			return err
		}
	}
	return commit(ctx, dst, "the working tree's tracked files")
}

func copyFile(src, dst string, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// commit commits whatever changed in work (nothing to commit is fine).
func commit(ctx context.Context, work, msg string) error {
	if _, err := output(ctx, work, nil, "git", "add", "-A"); err != nil {
		return err
	}
	if st, err := output(ctx, work, nil, "git", "status", "--porcelain"); err != nil || st == "" {
		return err
	}
	// An identity for the scratch copy's commits, where git may have none;
	// -tag commits in the repository with the user's own.
	var env []string
	if _, err := output(ctx, work, nil, "git", "config", "user.email"); err != nil {
		env = []string{"GIT_AUTHOR_NAME=release", "GIT_AUTHOR_EMAIL=release@localhost", "GIT_COMMITTER_NAME=release", "GIT_COMMITTER_EMAIL=release@localhost"}
	}
	_, err := output(ctx, work, env, "git", "commit", "-q", "-m", msg)
	return err
}

// output runs a command in dir with env added and returns its standard
// output; a failure keeps the command and the last lines of its output.
func output(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, goTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		lines := strings.Split(strings.TrimSpace(stderr.String()+"\n"+stdout.String()), "\n")
		if len(lines) > 8 {
			lines = lines[len(lines)-8:]
		}
		return "", fmt.Errorf("%s (in %s): %w\n%s", strings.Join(args, " "), dir, err, strings.Join(lines, "\n"))
	}
	return stdout.String(), nil
}
