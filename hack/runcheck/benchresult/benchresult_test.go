package benchresult

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestWriteRead: what Write writes, Read reads back, with the end time
// and the error set; no path writes nothing; a missing file is
// ErrNoResults, naming the path.
func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	r := New("hack/localbench", []string{"-n", "5"}, "the local backend")
	r.Setup = "kube-apiserver v1.37.2"
	r.Rows = []Row{
		{Name: "start", Seconds: Seconds([]time.Duration{1500 * time.Millisecond, time.Second})},
		{Name: "kwok", NotRun: "no kubectl"},
		{Name: "envtest", Failed: 1, FirstError: "boom"},
	}
	path := filepath.Join(dir, "sub", "r.json")
	if err := Write(path, r, errors.New("interrupted\n  mid-sample")); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Ended.IsZero() || got.Ended.Before(got.Started) {
		t.Errorf("ended %v, started %v", got.Ended, got.Started)
	}
	if got.Error != "interrupted mid-sample" {
		t.Errorf("error %q", got.Error)
	}
	r.Ended, r.Error = got.Ended, got.Error
	if !got.Started.Equal(r.Started) {
		t.Errorf("started %v, want %v", got.Started, r.Started)
	}
	r.Started = got.Started
	if !reflect.DeepEqual(got, r) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, r)
	}
	if got.Tool != "hack/localbench -n 5" {
		t.Errorf("tool %q", got.Tool)
	}

	if err := Write("", r, nil); err != nil {
		t.Errorf("no path: %v", err)
	}
	_, err = Read(filepath.Join(dir, "none.json"))
	if !errors.Is(err, ErrNoResults) || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing file: %v", err)
	}
}

// TestCommand quotes what a shell would read otherwise, and nothing else.
func TestCommand(t *testing.T) {
	got := Command("hack/startbench", []string{"-n", "10", "-only", "local,envtest", "-label", "a && b", "-x=it's", ""})
	want := `hack/startbench -n 10 -only local,envtest -label 'a && b' '-x=it'\''s' ''`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestLoadAverage is three numbers where /proc/loadavg is.
func TestLoadAverage(t *testing.T) {
	if _, err := os.Stat("/proc/loadavg"); err != nil {
		t.Skip("no /proc/loadavg")
	}
	if f := strings.Fields(LoadAverage()); len(f) != 3 {
		t.Errorf("LoadAverage() = %q", LoadAverage())
	}
}
