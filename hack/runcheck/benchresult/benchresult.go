// Package benchresult is what the benchmark commands write with -json
// (hack/localbench, hack/startbench, hack/kind bench) and what `runcheck
// benchmarks` renders into docs/benchmarks.md: each command's samples, as
// measured, with when it started and the machine's load then. Standard
// library only: hack/startbench, a module of its own, imports it too.
package benchresult

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Result is one benchmark command's run.
type Result struct {
	// Tool is the command that measured, with its flags as run
	// ("hack/localbench -n 5 -history 2000 -slow 0").
	Tool string `json:"tool"`
	// Title says what was measured, in a few words.
	Title string `json:"title"`
	// Setup is what every row shares: versions, what a sample spans.
	Setup string `json:"setup,omitempty"`
	// Started and Ended bound the run.
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	// Load is the machine's load average (1, 5 and 15 minutes) when the
	// run started; empty where it cannot be read.
	Load string `json:"load,omitempty"`
	// NotRun says why the command measured nothing on this machine (kind
	// without Docker or its node image); Rows is then empty. Not an error.
	NotRun string `json:"notRun,omitempty"`
	// Error is what ended the run early; Rows hold what it measured before.
	Error string `json:"error,omitempty"`
	Rows  []Row  `json:"rows,omitempty"`
}

// Row is one measurement: its samples in seconds.
type Row struct {
	Name    string    `json:"name"`
	Notes   string    `json:"notes,omitempty"`
	Seconds []float64 `json:"seconds,omitempty"`
	// Failed counts the samples that failed (not in Seconds); FirstError
	// is the first one's error.
	Failed     int    `json:"failed,omitempty"`
	FirstError string `json:"firstError,omitempty"`
	// NotRun says why the row has no samples on this machine (kwok without
	// kubectl on PATH, kind without its node image).
	NotRun string `json:"notRun,omitempty"`
}

// New is the Result of a run of tool with args starting now.
func New(tool string, args []string, title string) Result {
	return Result{Tool: Command(tool, args), Title: title, Started: time.Now().UTC(), Load: LoadAverage()}
}

// Seconds is samples in seconds, for Row.Seconds.
func Seconds(samples []time.Duration) []float64 {
	s := make([]float64, len(samples))
	for i, d := range samples {
		s[i] = d.Seconds()
	}
	return s
}

// Write ends r (Ended, and err as its Error) and writes it to path as
// JSON. An empty path writes nothing: the command ran without -json.
func Write(path string, r Result, err error) error {
	if path == "" {
		return nil
	}
	r.Ended = time.Now().UTC()
	if err != nil {
		r.Error = strings.Join(strings.Fields(err.Error()), " ")
	}
	data, merr := json.MarshalIndent(r, "", "  ")
	if merr != nil {
		return merr
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("results: %w", err)
		}
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// ErrNoResults is Read's error for a path with no file: the command did
// not run (or ended before it wrote its results).
var ErrNoResults = errors.New("no results")

// Read reads a Result written by Write and checks that it says what it
// measured: a tool, a title, a start time, each row named.
func Read(path string) (Result, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Result{}, fmt.Errorf("%w at %s", ErrNoResults, path)
	}
	if err != nil {
		return Result{}, err
	}
	var r Result
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Result{}, fmt.Errorf("%s is not a benchmark's results (benchresult.Result JSON): %w", path, err)
	}
	var missing []string
	if r.Tool == "" {
		missing = append(missing, "tool")
	}
	if r.Title == "" {
		missing = append(missing, "title")
	}
	if r.Started.IsZero() {
		missing = append(missing, "started")
	}
	for i, row := range r.Rows {
		if row.Name == "" {
			missing = append(missing, fmt.Sprintf("rows[%d].name", i))
		}
	}
	if len(missing) > 0 {
		return Result{}, fmt.Errorf("%s lacks %s: not a benchmark's results", path, strings.Join(missing, ", "))
	}
	return r, nil
}

// LoadAverage is /proc/loadavg's 1, 5 and 15 minute averages ("0.52 0.31
// 0.20"); "" where it cannot be read.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// Command spells tool and its arguments as a shell would take them back:
// an argument with a space or a shell character single-quoted.
func Command(tool string, args []string) string {
	parts := []string{tool}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, shellSpecial) {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// shellSpecial are the characters a shell reads in a word.
const shellSpecial = " \t\n'\"\\$`|&;<>()*?[]{}!#~"
