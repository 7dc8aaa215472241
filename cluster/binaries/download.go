package binaries

// Fetching kube-apiserver release binaries instead of building them: a
// build takes minutes on 2 cores, a download seconds where the release
// server can be reached. The source build stays the fallback.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// EnvKubeReleases is where kube-apiserver release binaries are fetched
// from: a base URL laid out as the official release server's
// (BASE/VERSION/bin/linux/ARCH/kube-apiserver and its .sha256), default
// DefaultKubeReleases; "none" builds from source only.
const EnvKubeReleases = "INFORMER_CONFORMANCE_KUBE_RELEASES"

// DefaultKubeReleases is the official release server.
const DefaultKubeReleases = "https://dl.k8s.io/release"

// errNoDownload: fetching is switched off, or there is no release binary
// for this platform (kube-apiserver is released for linux only).
var errNoDownload = errors.New("no release binary to fetch")

// downloadTimeout bounds one fetch (the binary is about 90 MB).
const downloadTimeout = 5 * time.Minute

// checksumTimeout bounds the first request, the release's .sha256: a
// machine whose firewall drops packets to the release server (rather than
// refusing them) learns it in this time, not in the kernel's connect
// timeout or downloadTimeout, before it builds from source.
var checksumTimeout = 30 * time.Second

// maxChecksumBytes bounds the .sha256 file read.
const maxChecksumBytes = 1 << 10

// fetchKubeAPIServer fetches kube-apiserver version from base into dst,
// verified against the release's SHA-256 (a mismatch is an error and
// leaves nothing at dst), then asks it for its version.
func fetchKubeAPIServer(ctx context.Context, base, version, dst string, progress io.Writer) error {
	if base == "none" || runtime.GOOS != "linux" {
		return errNoDownload
	}
	ctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	url := fmt.Sprintf("%s/%s/bin/linux/%s/%s", strings.TrimSuffix(base, "/"), version, runtime.GOARCH, KubeAPIServer)
	cctx, ccancel := context.WithTimeout(ctx, checksumTimeout)
	want, err := fetchChecksum(cctx, url+".sha256")
	ccancel()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".kube-apiserver.download-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // gone once renamed
	start := time.Now()
	got, n, err := fetchInto(ctx, url, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s: SHA-256 %s, the release says %s: not used", url, got, want)
	}
	if err := os.Chmod(tmp.Name(), 0o755); err != nil {
		return err
	}
	v, err := askVersion(ctx, tmp.Name(), kubeVersionOutput, "Kubernetes v1.36.3")
	if err != nil {
		return err
	}
	if v != version {
		return fmt.Errorf("%s says it is %s, not %s: not used", url, v, version)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return err
	}
	fmt.Fprintf(progress, "fetched %s (%d bytes, SHA-256 verified) in %s instead of building it\n", url, n, time.Since(start).Round(time.Millisecond))
	return nil
}

// fetchChecksum reads a .sha256 file: the hex digest, first on its line.
func fetchChecksum(ctx context.Context, url string) (string, error) {
	resp, err := get(ctx, url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(io.LimitReader(resp.Body, maxChecksumBytes))
	if !sc.Scan() {
		return "", fmt.Errorf("%s: empty", url)
	}
	fields := strings.Fields(sc.Text())
	if len(fields) == 0 || len(fields[0]) != sha256.Size*2 {
		return "", fmt.Errorf("%s: %q is not a SHA-256", url, sc.Text())
	}
	if _, err := hex.DecodeString(fields[0]); err != nil {
		return "", fmt.Errorf("%s: %q is not a SHA-256", url, fields[0])
	}
	return strings.ToLower(fields[0]), nil
}

// fetchInto copies url's body to w and returns its SHA-256 and size.
func fetchInto(ctx context.Context, url string, w io.Writer) (string, int64, error) {
	resp, err := get(ctx, url)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), resp.Body)
	if err != nil {
		return "", n, fmt.Errorf("%s: %w", url, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

func get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return resp, nil
}
