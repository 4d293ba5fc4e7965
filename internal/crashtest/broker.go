package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// target is the broker the run kills and restarts on its data.
type target interface {
	// start starts the broker on its data and returns once it runs (not
	// necessarily serving yet).
	start() error
	// ready waits until the broker serves.
	ready(ctx context.Context) error
	// kill sends SIGKILL and waits until the process is gone.
	kill() error
	// stop stops it for good (SIGKILL too: the run is over).
	stop()
}

// simTarget is a pulsarsim process.
type simTarget struct {
	o   options
	cmd *exec.Cmd
	log *os.File
}

func (s *simTarget) start() error {
	args := []string{"-addr", s.o.addr, "-http", s.o.http, "-view=false"}
	if !s.o.noDataDir {
		args = append(args, "-data-dir", s.o.dataDir)
	}
	if s.o.dedup {
		args = append(args, "-deduplication")
	}
	args = append(args, fields(s.o.simArgs)...)
	if s.log == nil {
		f, err := os.OpenFile(filepath.Join(s.o.workDir, "pulsarsim.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		s.log = f
	}
	fmt.Fprintf(s.log, "==== %s start %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(s.o.sim, args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		return err
	}
	s.cmd = cmd
	return nil
}

func (s *simTarget) ready(ctx context.Context) error {
	exited := make(chan error, 1)
	go func() { exited <- waitTCP(ctx, s.o.addr) }()
	select {
	case err := <-exited:
		if err != nil {
			return err
		}
		return waitHTTP(ctx, "http://"+s.o.http+"/admin/v2/clusters")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *simTarget) kill() error {
	if s.cmd == nil {
		return nil
	}
	err := s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
	if s.cmd.ProcessState != nil && !s.cmd.ProcessState.Exited() {
		err = nil // killed, as asked
	} else if s.cmd.ProcessState != nil {
		err = fmt.Errorf("pulsarsim had exited before the kill (%s): see %s", s.cmd.ProcessState, s.log.Name())
	}
	s.cmd = nil
	return err
}

func (s *simTarget) stop() {
	_ = s.kill()
	if s.log != nil {
		s.log.Close()
	}
}

// realTarget is a real Pulsar standalone run by scripts/real-pulsar.
type realTarget struct {
	o    options
	port string
	http string
}

func newRealTarget(o options) *realTarget {
	_, port, _ := net.SplitHostPort(o.addr)
	_, http, _ := net.SplitHostPort(o.http)
	return &realTarget{o: o, port: port, http: http}
}

func (r *realTarget) script(args ...string) error {
	cmd := exec.Command(r.o.real, append(args, "--port", r.port, "--http-port", r.http)...)
	f, err := os.OpenFile(filepath.Join(r.o.workDir, "real-pulsar.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	return cmd.Run()
}

// start starts the standalone on the data it has (the first time too: the
// run starts on whatever the broker on that port kept).
func (r *realTarget) start() error { return r.script("start", "--keep-data") }

func (r *realTarget) ready(ctx context.Context) error {
	return waitHTTP(ctx, "http://"+r.o.http+"/admin/v2/namespaces/public/default")
}

func (r *realTarget) pidFile() string {
	cache := os.Getenv("PULSARSIM_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "pulsarsim")
	}
	return filepath.Join(cache, "real-pulsar", "run-"+r.port, "broker.pid")
}

func (r *realTarget) kill() error {
	b, err := os.ReadFile(r.pidFile())
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return err
	}
	for syscall.Kill(pid, 0) == nil {
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

func (r *realTarget) stop() {}

// waitTCP waits until addr accepts connections.
func waitTCP(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s does not accept connections: %w", addr, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitHTTP waits until url answers 200.
func waitHTTP(ctx context.Context, url string) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %d", resp.StatusCode)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s does not answer: %w", url, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
