package lbimage

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/informer-conformance/informer-conformance/cluster/kind/docker"
)

// These tests lend names on the real Docker daemon, with images and names
// of their own (a tiny image imported from a tar of one file, never run),
// so kind's real name and the real stand-in are not touched while other
// runs use them. Their "kind's image" cannot be pulled (no such
// repository), as offline.

const envHelper = "LBIMAGE_TEST_HOLDER" // the lock directory, in the helper process

// testLender makes a stand-in named for this test (with the owner label)
// and returns a lender of it, the Docker client and a function that makes
// an image of kind's name without the label (kind's own, pulled by the
// user).
func testLender(t *testing.T) (lender, *docker.Docker, func()) {
	t.Helper()
	ctx := context.Background()
	skip := t.Skipf
	if os.Getenv("INFORMER_CONFORMANCE_KIND_INTEGRATION") == "1" {
		skip = t.Fatalf
	}
	if testing.Short() {
		t.Skip("uses Docker")
	}
	d, err := docker.New(ctx)
	if err != nil {
		skip("%v", err)
		return lender{}, nil, nil
	}
	base := fmt.Sprintf("informer-conformance-lbtest-%d-%s", os.Getpid(), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")))
	l := lender{dir: t.TempDir(), upstream: base + "-kinds:v1", standIn: base + "-standin:r1"}
	importImage(t, d, l.standIn, "stand-in", "LABEL "+LabelOwner+"="+OwnerImage+" "+LabelRecipe+"="+Recipe)
	t.Cleanup(func() {
		for _, ref := range []string{l.upstream, l.standIn} {
			_, _ = d.Run(ctx, nil, "rmi", "-f", ref)
		}
	})
	return l, d, func() { importImage(t, d, l.upstream, "kind's own") }
}

// importImage imports an image of one file (content tells the images
// apart) under ref with the given Dockerfile changes.
func importImage(t *testing.T, d *docker.Docker, ref, content string, changes ...string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/content", []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	tar := exec.Command("tar", "-C", dir, "-c", "content")
	pipe, err := tar.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tar.Start(); err != nil {
		t.Fatal(err)
	}
	args := []string{"import"}
	for _, c := range changes {
		args = append(args, "--change", c)
	}
	if _, err := d.Run(context.Background(), pipe, append(args, "-", ref)...); err != nil {
		t.Fatal(err)
	}
	if err := tar.Wait(); err != nil {
		t.Fatal(err)
	}
}

// name says what has the name upstream: "" (nothing), "stand-in" or
// "other".
func name(t *testing.T, d *docker.Docker, l lender) string {
	t.Helper()
	up := Inspect(context.Background(), d, l.upstream)
	if !up.Present {
		return ""
	}
	if up.ID == Inspect(context.Background(), d, l.standIn).ID {
		return "stand-in"
	}
	return "other"
}

// Lent for the first use, kept while a second use in the process is
// running, taken back at the last release; the stand-in keeps its name.
func TestLendInProcess(t *testing.T) {
	l, d, _ := testLender(t)
	ctx := context.Background()
	if got := name(t, d, l); got != "" {
		t.Fatalf("before use: %s has the name %q", l.upstream, got)
	}
	r1, err := l.use(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := name(t, d, l); got != "stand-in" {
		t.Fatalf("during use: %s is %q, want the stand-in", l.upstream, got)
	}
	r2, err := l.use(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	r1()
	r1() // a second call of one release changes nothing
	if got := name(t, d, l); got != "stand-in" {
		t.Fatalf("one of two uses released: %s is %q, want the stand-in still", l.upstream, got)
	}
	r2()
	if got := name(t, d, l); got != "" {
		t.Fatalf("after the last release: %s is %q, want no such image", l.upstream, got)
	}
	if s := Inspect(ctx, d, l.standIn); !s.Present || !s.Ours {
		t.Fatalf("the stand-in %s is gone after the release: %+v", l.standIn, s)
	}
}

// An image of kind's name without the owner label (kind's own) is used:
// nothing lent, nothing removed, not even by Unlend.
func TestKindsOwnIsUsed(t *testing.T) {
	l, d, kindsOwn := testLender(t)
	ctx := context.Background()
	kindsOwn()
	release, err := l.use(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := name(t, d, l); got != "other" {
		t.Fatalf("during use: %s is %q, want kind's own", l.upstream, got)
	}
	release()
	if removed, err := l.unlend(ctx, d); err != nil || len(removed) > 0 {
		t.Fatalf("unlend = %v, %v", removed, err)
	}
	if got := name(t, d, l); got != "other" {
		t.Fatalf("after release and unlend: %s is %q, want kind's own", l.upstream, got)
	}
}

// Without kind's image or the stand-in: an error saying what to run.
func TestNoImageSaysMakeKindImage(t *testing.T) {
	l, d, _ := testLender(t)
	l.standIn += "-none"
	if _, err := l.use(context.Background(), d, nil); err == nil || !strings.Contains(err.Error(), "make kind-image") {
		t.Fatalf("use without images = %v, want an error naming make kind-image", err)
	}
}

// Across processes: a holder in another process keeps the name after this
// process's release; killed (SIGKILL) it leaves the name lent, and Unlend
// (make kind-clean) takes it back.
func TestLendAcrossProcesses(t *testing.T) {
	l, d, _ := testLender(t)
	ctx := context.Background()
	holder, _, stdin := startHolder(t, l)
	if got := name(t, d, l); got != "stand-in" {
		t.Fatalf("while the other process holds it: %s is %q", l.upstream, got)
	}
	release, err := l.use(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if got := name(t, d, l); got != "stand-in" {
		t.Fatalf("released here, held there: %s is %q, want the stand-in still", l.upstream, got)
	}
	if removed, err := l.unlend(ctx, d); err != nil || len(removed) > 0 {
		t.Fatalf("unlend while the other process holds it = %v, %v; want nothing removed", removed, err)
	}
	defer stdin.Close()
	if err := holder.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = holder.Wait()
	if got := name(t, d, l); got != "stand-in" {
		t.Fatalf("after the holder was killed: %s is %q; want the stand-in (no release ran)", l.upstream, got)
	}
	removed, err := l.unlend(ctx, d)
	if err != nil || len(removed) != 1 {
		t.Fatalf("unlend after the kill = %v, %v; want the name removed", removed, err)
	}
	t.Logf("unlend: %s", removed[0])
	if got := name(t, d, l); got != "" {
		t.Fatalf("after unlend: %s is %q, want no such image", l.upstream, got)
	}
}

// The last release in any process takes the name back: here the other
// process's, after this one's.
func TestLastReleaseAcrossProcesses(t *testing.T) {
	l, d, _ := testLender(t)
	ctx := context.Background()
	release, err := l.use(ctx, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	holder, stdout, stdin := startHolder(t, l)
	release()
	if got := name(t, d, l); got != "stand-in" {
		t.Fatalf("released here, held there: %s is %q, want the stand-in still", l.upstream, got)
	}
	stdin.Close() // the holder releases and exits
	if line, err := waitFor(stdout, "released"); err != nil {
		t.Fatalf("holder process: %v (last line %q)", err, line)
	}
	if err := holder.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := name(t, d, l); got != "" {
		t.Fatalf("after the last release (the other process's): %s is %q, want no such image", l.upstream, got)
	}
}

// startHolder starts TestHolderProcess on l and returns once it holds the
// name: its stdout, and its stdin, whose close makes it release.
func startHolder(t *testing.T, l lender) (*exec.Cmd, io.Reader, io.Closer) {
	t.Helper()
	holder := exec.Command(os.Args[0], "-test.run=^TestHolderProcess$", "-test.v")
	holder.Env = append(os.Environ(), envHelper+"="+strings.Join([]string{l.dir, l.upstream, l.standIn}, "\n"))
	stdout, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := holder.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	holder.Stderr = os.Stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	if line, err := waitFor(stdout, "holding"); err != nil {
		t.Fatalf("holder process: %v (last line %q)", err, line)
	}
	return holder, stdout, stdin
}

// waitFor reads lines until one is want.
func waitFor(r io.Reader, want string) (string, error) {
	sc := bufio.NewScanner(r)
	line := ""
	for sc.Scan() {
		line = sc.Text()
		if line == want {
			return line, nil
		}
	}
	return line, fmt.Errorf("no line %q: %v", want, sc.Err())
}

// TestHolderProcess is the other process of the tests above (run only with
// envHelper set): it uses the name, says "holding", and releases at EOF on
// stdin.
func TestHolderProcess(t *testing.T) {
	v := os.Getenv(envHelper)
	if v == "" {
		t.Skip("the helper process of TestLendAcrossProcesses")
	}
	f := strings.Split(v, "\n")
	l := lender{dir: f[0], upstream: f[1], standIn: f[2]}
	d, err := docker.New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	release, err := l.use(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("holding")
	_, _ = io.Copy(io.Discard, os.Stdin)
	release()
	fmt.Println("released")
}
