package dockerapi

import (
	"bufio"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Testcontainers starts a reaper container (its Ryuk image) before the
// containers of a test session, connects to it and sends it label filters,
// one line each ("label=k=v&label=k2=v2"), which it acknowledges with
// "ACK\n". Once every connection has closed and none came back for the
// reconnection timeout (RYUK_RECONNECTION_TIMEOUT, 10 s by default), it
// removes every container whose labels match one of the filters, and ends.
// Without a first connection for RYUK_CONNECTION_TIMEOUT (60 s) it ends
// too. Here the reaper is a listener of the server's own on the container's
// mapped port, so a session needs no more than DOCKER_HOST.

// reaperImage reports whether image is Testcontainers' Ryuk image.
func reaperImage(image string) bool {
	repo, _, _ := strings.Cut(strings.TrimPrefix(image, "docker.io/"), ":")
	return repo == "testcontainers/ryuk" || strings.HasSuffix(repo, "/testcontainers/ryuk")
}

// reaper is a running reaper: a Process of the server's own.
type reaper struct {
	s        *Server
	ln       net.Listener
	done     chan struct{}
	once     sync.Once
	mu       sync.Mutex
	filters  []map[string]string // each: labels a container must all have
	conns    int
	lastSeen time.Time
	seen     bool
	code     int
}

// envDuration reads a Go duration (or whole seconds) from the container's
// environment.
func envDuration(env []string, name string, def time.Duration) time.Duration {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			if d, err := time.ParseDuration(v); err == nil {
				return d
			}
			if n, err := strconv.Atoi(v); err == nil {
				return time.Duration(n) * time.Second
			}
		}
	}
	return def
}

// startReaper starts the reaper of container c on its first exposed port.
func (s *Server) startReaper(c *container) (Process, error) {
	port := 0
	for _, p := range c.exposed {
		port = c.ports[p]
		break
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	r := &reaper{s: s, ln: ln, done: make(chan struct{}), lastSeen: time.Now()}
	connectTimeout := envDuration(c.env, "RYUK_CONNECTION_TIMEOUT", time.Minute)
	reconnectTimeout := envDuration(c.env, "RYUK_RECONNECTION_TIMEOUT", 10*time.Second)
	c.log.Stdout().Write([]byte("pulsarsim: the reaper listens, as Ryuk does: Started!\n"))
	go r.accept()
	go r.watch(connectTimeout, reconnectTimeout)
	return r, nil
}

func (r *reaper) accept() {
	for {
		conn, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.conns++
		r.seen = true
		r.mu.Unlock()
		go r.serve(conn)
	}
}

// serve reads one connection's filters and acknowledges each.
func (r *reaper) serve(conn net.Conn) {
	defer func() {
		conn.Close()
		r.mu.Lock()
		r.conns--
		r.lastSeen = time.Now()
		r.mu.Unlock()
	}()
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		q, err := url.ParseQuery(strings.TrimSpace(sc.Text()))
		if err != nil {
			continue
		}
		f := map[string]string{}
		for _, l := range q["label"] {
			k, v, _ := strings.Cut(l, "=")
			f[k] = v
		}
		r.mu.Lock()
		r.filters = append(r.filters, f)
		r.mu.Unlock()
		if _, err := conn.Write([]byte("ACK\n")); err != nil {
			return
		}
	}
}

// watch ends the reaper once its clients are gone for the reconnection
// timeout (after removing what their filters match), or when none came
// within the connection timeout.
func (r *reaper) watch(connectTimeout, reconnectTimeout time.Duration) {
	start := time.Now()
	for {
		select {
		case <-r.done:
			return
		case <-time.After(100 * time.Millisecond):
		}
		r.mu.Lock()
		seen, conns, last := r.seen, r.conns, r.lastSeen
		r.mu.Unlock()
		switch {
		case !seen && time.Since(start) > connectTimeout:
			r.end(0)
			return
		case seen && conns == 0 && time.Since(last) > reconnectTimeout:
			r.mu.Lock()
			filters := r.filters
			r.mu.Unlock()
			r.s.reap(filters)
			r.end(0)
			return
		}
	}
}

func (r *reaper) end(code int) {
	r.once.Do(func() {
		r.mu.Lock()
		r.code = code
		r.mu.Unlock()
		r.ln.Close()
		close(r.done)
	})
}

// Signal ends the reaper (128 + the signal, as a killed process).
func (r *reaper) Signal(sig string) {
	if sig == "SIGKILL" {
		r.end(137)
		return
	}
	r.end(143)
}

// Done is closed when the reaper has ended.
func (r *reaper) Done() <-chan struct{} { return r.done }

// ExitCode is the reaper's exit status.
func (r *reaper) ExitCode() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.code
}

// reap kills and removes the containers whose labels match one of filters.
func (s *Server) reap(filters []map[string]string) {
	s.mu.Lock()
	var gone []*container
	for _, c := range s.containers {
		for _, f := range filters {
			if len(f) > 0 && labelsMatch(c.labels, f) {
				gone = append(gone, c)
				break
			}
		}
	}
	s.mu.Unlock()
	for _, c := range gone {
		s.mu.Lock()
		p := c.proc
		running := c.running
		s.mu.Unlock()
		if running && p != nil {
			p.Signal("SIGKILL")
			s.settle(c, p)
		}
		s.forget(c)
	}
}

// labelsMatch reports whether labels has every label of want.
func labelsMatch(labels, want map[string]string) bool {
	for k, v := range want {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// forget removes c from the server and deletes its data directory.
func (s *Server) forget(c *container) {
	s.mu.Lock()
	delete(s.containers, c.id)
	c.removed = true
	c.changedLocked()
	dir := c.dataDir
	s.mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
}
