package binaries

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestFetchKubeAPIServer: the download path against a local release
// server laid out as dl.k8s.io: a binary whose SHA-256 and version match
// is installed; a wrong checksum, a wrong version or a missing file leave
// nothing behind; "none" fetches nothing.
func TestFetchKubeAPIServer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kube-apiserver is released for linux only")
	}
	script := func(v string) []byte { return []byte("#!/bin/sh\necho Kubernetes " + v + "\n") }
	files := map[string][]byte{}
	publish := func(version string, body []byte, sum []byte) {
		p := "/" + version + "/bin/linux/" + runtime.GOARCH + "/kube-apiserver"
		files[p] = body
		if sum == nil {
			h := sha256.Sum256(body)
			sum = []byte(hex.EncodeToString(h[:]))
		}
		files[p+".sha256"] = sum
	}
	publish("v1.36.3", script("v1.36.3"), nil)
	publish("v1.36.2", script("v1.36.2"), bytes.Repeat([]byte("0"), 64))
	publish("v1.36.1", script("v1.36.0"), nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	defer srv.Close()

	dir := t.TempDir()
	var progress bytes.Buffer
	dst := filepath.Join(dir, "v1.36.3", KubeAPIServer)
	if err := fetchKubeAPIServer(context.Background(), srv.URL, "v1.36.3", dst, &progress); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode()&0o111 == 0 {
		t.Errorf("%s not an executable: %v", dst, err)
	}
	if !strings.Contains(progress.String(), "SHA-256 verified") {
		t.Errorf("progress %q does not say the checksum was verified", progress.String())
	}
	for _, tc := range []struct{ version, want string }{
		{"v1.36.2", "the release says 0000"},
		{"v1.36.1", "says it is v1.36.0, not v1.36.1"},
		{"v1.35.0", "404 Not Found"},
	} {
		dst := filepath.Join(dir, tc.version, KubeAPIServer)
		err := fetchKubeAPIServer(context.Background(), srv.URL, tc.version, dst, &progress)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.version, err, tc.want)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, tc.version, "*")); len(left) > 0 {
			t.Errorf("%s: left %v behind", tc.version, left)
		}
		if _, err := os.Stat(filepath.Join(dir, tc.version, ".")); err == nil {
			entries, _ := os.ReadDir(filepath.Join(dir, tc.version))
			for _, e := range entries {
				t.Errorf("%s: left %s behind", tc.version, e.Name())
			}
		}
	}
	if err := fetchKubeAPIServer(context.Background(), "none", "v1.36.3", filepath.Join(dir, "x"), &progress); !errors.Is(err, errNoDownload) {
		t.Errorf("base none: err %v, want errNoDownload", err)
	}
}

// TestFetchKubeAPIServerSilentServer: a release server that accepts the
// connection and never answers (a firewall that drops rather than refuses
// looks the same to the dial's caller) costs checksumTimeout, then the
// source build goes on; nothing is left behind.
func TestFetchKubeAPIServerSilentServer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kube-apiserver is released for linux only")
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	old := checksumTimeout
	checksumTimeout = 200 * time.Millisecond
	defer func() { checksumTimeout = old }()

	dst := filepath.Join(t.TempDir(), "v1.36.3", KubeAPIServer)
	start := time.Now()
	err := fetchKubeAPIServer(context.Background(), srv.URL, "v1.36.3", dst, io.Discard)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("fetch from a server that never answers: %v, want the checksum's deadline", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("fetch from a server that never answers took %s, want about checksumTimeout (%s)", d, checksumTimeout)
	}
	if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after a failed fetch: %v", dst, err)
	}
}
