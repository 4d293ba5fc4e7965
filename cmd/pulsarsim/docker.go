package main

import (
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/pulsarsim/pulsarsim/dockerapi"
)

// dockerAPIAddr returns the address of -docker-api when args give it
// (-docker-api ADDR or -docker-api=ADDR): pulsarsim then serves the Docker
// Engine API there instead of a broker.
func dockerAPIAddr(args []string) (string, bool) {
	for i, a := range args {
		a = "-" + strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, "-docker-api="); ok {
			return v, true
		}
		if a == "-docker-api" && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// serveDockerAPI serves the Docker Engine API on addr (unix:///path,
// tcp://host:port or host:port), each container of a Pulsar image a
// pulsarsim process of this same binary, until SIGINT or SIGTERM.
func serveDockerAPI(addr string, logger *slog.Logger) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	network, address := "tcp", strings.TrimPrefix(addr, "tcp://")
	if path, ok := strings.CutPrefix(addr, "unix://"); ok {
		network, address = "unix", path
		os.Remove(path)
	}
	ln, err := net.Listen(network, address)
	if err != nil {
		return fmt.Errorf("-docker-api %s: %w", addr, err)
	}
	srv := &dockerapi.Server{Runtime: processRuntime{binary: self}}
	host := "unix://" + address
	if network == "tcp" {
		host = "tcp://" + ln.Addr().String()
	}
	logger.Info("pulsarsim serves the Docker Engine API: Pulsar containers run as pulsarsim brokers",
		"DOCKER_HOST", host, "TESTCONTAINERS_RYUK_DISABLED", "true")
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(stop)
	select {
	case err = <-done:
	case <-stop:
		ln.Close()
		err = nil
	}
	srv.Close()
	if network == "unix" {
		os.Remove(address)
	}
	return err
}

// processRuntime runs a container's broker as a pulsarsim process of
// binary, with args before its own and env added to its environment.
type processRuntime struct {
	binary string
	args   []string
	env    []string
}

// Start runs binary with the container's ports and standalone.conf.
func (p processRuntime) Start(spec dockerapi.Spec) (dockerapi.Process, error) {
	// A container's store is kept in its data directory, so that a
	// container stopped and started again finds its topics, as a Docker
	// container finds its file system.
	args := append(slices.Clone(p.args), "-addr", "127.0.0.1:"+strconv.Itoa(spec.BrokerPort),
		"-data-dir", filepath.Join(spec.DataDir, "data"))
	if spec.WebPort != 0 {
		args = append(args, "-http", "127.0.0.1:"+strconv.Itoa(spec.WebPort))
	} else {
		args = append(args, "-http", "")
	}
	if len(spec.Conf) > 0 {
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(spec.Conf)) {
			fmt.Fprintf(&b, "%s=%s\n", k, spec.Conf[k])
		}
		conf := filepath.Join(spec.DataDir, "standalone.conf")
		if err := os.WriteFile(conf, []byte(b.String()), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "-config", conf)
	}
	cmd := exec.Command(p.binary, args...)
	if len(p.env) > 0 {
		cmd.Env = append(os.Environ(), p.env...)
	}
	cmd.Stdout = spec.Out.Stdout()
	cmd.Stderr = spec.Out.Stderr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	proc := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		cmd.Wait()
		proc.mu.Lock()
		st := cmd.ProcessState
		switch ws, ok := st.Sys().(syscall.WaitStatus); {
		case ok && ws.Signaled():
			proc.code = 128 + int(ws.Signal())
		default:
			proc.code = st.ExitCode()
		}
		proc.mu.Unlock()
		close(proc.done)
	}()
	return proc, nil
}

// process is a running pulsarsim process.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	code int
}

// Signal sends SIGTERM or SIGKILL.
func (p *process) Signal(sig string) {
	if sig == "SIGKILL" {
		p.cmd.Process.Signal(syscall.SIGKILL)
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
}

// Done is closed when the process has ended.
func (p *process) Done() <-chan struct{} { return p.done }

// ExitCode is the process's exit status (128 + the signal's number when a
// signal ended it).
func (p *process) ExitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code
}
