package translator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// DefaultPoll is how often the Supervisor reads kind's files. kind replaces
// them with mv (pkg/cluster/internal/create/actions/loadbalancer: tmp files
// moved over lds.yaml and cds.yaml), so a read sees an old file or a new
// one, never half of one.
const DefaultPoll = 250 * time.Millisecond

// Supervisor runs haproxy with the configuration rendered from an Envoy
// bootstrap file and the listener and cluster files it names, and renders
// again, and reloads haproxy, when those files change.
type Supervisor struct {
	// Bootstrap is the path of Envoy's bootstrap file (envoy -c).
	Bootstrap string
	// HAProxy is the haproxy executable (default "haproxy" on PATH).
	HAProxy string
	// ConfigPath is where haproxy.cfg is written (default haproxy.cfg next to
	// Bootstrap).
	ConfigPath string
	// Poll is how often the files are read (default DefaultPoll).
	Poll time.Duration
	// Log receives a line for each render, reload and rejected update
	// (default os.Stderr); haproxy's own output goes to os.Stdout and
	// os.Stderr.
	Log io.Writer

	mu    sync.Mutex
	procs map[int]*exec.Cmd // haproxy processes not yet reaped
	done  chan struct{}     // closed when Run returns
}

// Run renders and starts haproxy, then follows the files until ctx ends
// (it then stops every haproxy it started and returns nil) or the current
// haproxy exits (an error: the bootstrap loop kind runs starts envoy again).
// An update that does not render, or that haproxy -c rejects, is logged and
// the running configuration kept, as Envoy keeps its last good one.
func (s *Supervisor) Run(ctx context.Context) error {
	if s.HAProxy == "" {
		s.HAProxy = "haproxy"
	}
	if s.ConfigPath == "" {
		s.ConfigPath = filepath.Join(filepath.Dir(s.Bootstrap), "haproxy.cfg")
	}
	if s.Poll <= 0 {
		s.Poll = DefaultPoll
	}
	if s.Log == nil {
		s.Log = os.Stderr
	}
	s.procs = map[int]*exec.Cmd{}
	data, err := os.ReadFile(s.Bootstrap)
	if err != nil {
		return err
	}
	b, err := ParseBootstrap(data)
	if err != nil {
		return err
	}
	lds, cds := b.DynamicResources.LDSConfig.PathConfigSource.Path, b.DynamicResources.CDSConfig.PathConfigSource.Path
	exited := make(chan int) // pids of haproxy processes that ended
	s.done = make(chan struct{})
	defer close(s.done) // after stopAll: the reapers' sends end
	defer s.stopAll()

	var lastLDS, lastCDS []byte
	var rendered string
	current := 0 // pid of the haproxy serving the current configuration
	tick := time.NewTicker(s.Poll)
	defer tick.Stop()
	for {
		l, lerr := os.ReadFile(lds)
		c, cerr := os.ReadFile(cds)
		switch {
		case lerr != nil || cerr != nil:
			if current == 0 {
				return fmt.Errorf("read the listeners and clusters: %w", errors.Join(lerr, cerr))
			}
			fmt.Fprintf(s.Log, "envoy(haproxy): cannot read the configuration files, keeping the running one: %v\n", errors.Join(lerr, cerr))
		case current != 0 && bytes.Equal(l, lastLDS) && bytes.Equal(c, lastCDS):
		default:
			lastLDS, lastCDS = l, c
			cfg, err := render(b, l, c)
			if err == nil && cfg != rendered {
				var pid int
				pid, err = s.reload(cfg, current, exited)
				if err == nil {
					rendered, current = cfg, pid
				}
			}
			if err != nil {
				if current == 0 {
					return err
				}
				fmt.Fprintf(s.Log, "envoy(haproxy): update rejected, keeping the running configuration: %v\n", err)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case pid := <-exited:
			if pid == current {
				return fmt.Errorf("haproxy (pid %d) exited", pid)
			}
		case <-tick.C:
		}
	}
}

func render(b Bootstrap, lds, cds []byte) (string, error) {
	ls, err := ParseListeners(lds)
	if err != nil {
		return "", err
	}
	cs, err := ParseClusters(cds)
	if err != nil {
		return "", err
	}
	return Render(b, ls, cs)
}

// reload checks cfg with haproxy -c, writes it and starts a haproxy on it
// that takes over from old (-sf: the new process binds, then tells the old
// one to stop accepting and finish its connections).
func (s *Supervisor) reload(cfg string, old int, exited chan<- int) (int, error) {
	tmp := s.ConfigPath + ".new"
	if err := os.WriteFile(tmp, []byte(cfg), 0o644); err != nil {
		return 0, err
	}
	if out, err := exec.Command(s.HAProxy, "-c", "-q", "-f", tmp).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("haproxy -c rejects the rendered configuration: %w: %s", err, bytes.TrimSpace(out))
	}
	if err := os.Rename(tmp, s.ConfigPath); err != nil {
		return 0, err
	}
	args := []string{"-db", "-f", s.ConfigPath}
	if old != 0 {
		args = append(args, "-sf", strconv.Itoa(old))
	}
	cmd := exec.Command(s.HAProxy, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	pid := cmd.Process.Pid
	s.mu.Lock()
	s.procs[pid] = cmd
	s.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		s.mu.Lock()
		delete(s.procs, pid)
		s.mu.Unlock()
		select {
		case exited <- pid:
		case <-s.done:
		}
	}()
	if old == 0 {
		fmt.Fprintf(s.Log, "envoy(haproxy): started haproxy (pid %d) on %s\n", pid, s.ConfigPath)
	} else {
		fmt.Fprintf(s.Log, "envoy(haproxy): configuration changed: haproxy (pid %d) took over from pid %d\n", pid, old)
	}
	return pid, nil
}

// stopAll stops every haproxy still running (SIGTERM: haproxy's hard stop)
// and waits for them, at most 5 s.
func (s *Supervisor) stopAll() {
	s.mu.Lock()
	var cmds []*exec.Cmd
	for _, c := range s.procs {
		cmds = append(cmds, c)
	}
	s.mu.Unlock()
	for _, c := range cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		n := len(s.procs)
		s.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range cmds {
		_ = c.Process.Kill()
	}
}
