package dockerapi

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Runtime runs the broker of a container.
type Runtime interface {
	// Start starts a broker for the container as spec says: its binary
	// protocol on BrokerPort and its admin API on WebPort (127.0.0.1), set
	// by Conf (standalone.conf keys and values), writing its output to Out,
	// with DataDir, kept while the container exists, for its files.
	Start(spec Spec) (Process, error)
}

// Spec is what a container asks of its broker.
type Spec struct {
	Name       string            // the container's name, without the slash
	BrokerPort int               // host port of container port 6650
	WebPort    int               // host port of container port 8080
	Conf       map[string]string // standalone.conf keys from the environment
	DataDir    string            // a directory of the container's own
	Out        *Log              // where the broker's output goes
}

// Process is a running broker.
type Process interface {
	// Signal sends the process a signal: "SIGTERM" or "SIGKILL".
	Signal(sig string)
	// Done is closed when the process has ended; ExitCode is then set.
	Done() <-chan struct{}
	// ExitCode is the process's exit status once Done is closed (128 + the
	// signal's number when a signal ended it, as Docker reports it).
	ExitCode() int
}

// container is one container: its request, its ports and its state.
type container struct {
	id      string
	name    string
	image   string
	cmd     []string
	env     []string
	labels  map[string]string
	exposed []string       // "6650/tcp", sorted
	ports   map[string]int // exposed port -> host port
	created time.Time
	dataDir string
	log     *Log
	// reaper: the container is Testcontainers' reaper (reaper.go);
	// autoRemove: it is removed once it ends (HostConfig.AutoRemove).
	reaper     bool
	autoRemove bool
	tty        bool // Config.Tty: attached output is raw, not multiplexed

	// guarded by Server.mu
	proc       Process
	running    bool
	started    time.Time
	finished   time.Time
	exitCode   int
	startCount int
	removed    bool
	// changed is closed and replaced at each start, exit and removal.
	changed chan struct{}
}

// changedLocked wakes whoever waits on the container's state. The caller
// holds Server.mu.
func (c *container) changedLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Log is a container's output: every line kept, and readers woken when
// more comes.
type Log struct {
	mu     sync.Mutex
	data   []frame
	closed bool
	more   chan struct{}
}

// frame is one write to the log: its stream (1 stdout, 2 stderr), bytes and
// time.
type frame struct {
	stream byte
	data   []byte
	at     time.Time
}

func newLog() *Log { return &Log{more: make(chan struct{})} }

// Stdout returns a writer to the log's stdout stream.
func (l *Log) Stdout() *StreamWriter { return &StreamWriter{l: l, stream: 1} }

// Stderr returns a writer to the log's stderr stream.
func (l *Log) Stderr() *StreamWriter { return &StreamWriter{l: l, stream: 2} }

// StreamWriter writes to one stream of a Log.
type StreamWriter struct {
	l      *Log
	stream byte
}

// Write appends p to the log.
func (w *StreamWriter) Write(p []byte) (int, error) {
	w.l.append(w.stream, p)
	return len(p), nil
}

func (l *Log) append(stream byte, p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.data = append(l.data, frame{stream: stream, data: slices.Clone(p), at: time.Now()})
	close(l.more)
	l.more = make(chan struct{})
}

// size returns the number of frames written so far.
func (l *Log) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.data)
}

// read returns the frames from index i on, and a channel closed when more
// come.
func (l *Log) read(i int) ([]frame, chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i > len(l.data) {
		i = len(l.data)
	}
	return slices.Clone(l.data[i:]), l.more
}

// pulsarImage reports whether image names a Pulsar image: the repository
// apachepulsar/pulsar or apachepulsar/pulsar-all, with any registry and tag.
func pulsarImage(image string, extra []string) bool {
	repo := image
	if i := strings.LastIndex(repo, "@"); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	repo = strings.TrimPrefix(repo, "docker.io/")
	repo = strings.TrimPrefix(repo, "library/")
	if repo == "apachepulsar/pulsar" || repo == "apachepulsar/pulsar-all" || strings.HasSuffix(repo, "/apachepulsar/pulsar") {
		return true
	}
	return slices.Contains(extra, repo) || slices.Contains(extra, image)
}

// confFromEnv returns the standalone.conf settings a container's
// environment gives: every VAR=value whose name is a key (letters and
// digits, starting with a letter, as standalone.conf's keys are), and
// PULSAR_PREFIX_key=value, as the image's apply-config-from-env.py applies
// them. The image's own variables (PULSAR_MEM, PULSAR_GC...) are not keys.
func confFromEnv(env []string) map[string]string {
	conf := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if p, found := strings.CutPrefix(k, "PULSAR_PREFIX_"); found {
			k = p
		} else if strings.HasPrefix(k, "PULSAR_") || strings.ToUpper(k) == k {
			continue
		}
		if confKey(k) {
			conf[k] = v
		}
	}
	return conf
}

// confKey reports whether k looks like a standalone.conf key.
func confKey(k string) bool {
	if k == "" || !(k[0] >= 'a' && k[0] <= 'z' || k[0] >= 'A' && k[0] <= 'Z') {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_') {
			return false
		}
	}
	return true
}

// portNumber returns the number of "6650/tcp".
func portNumber(p string) int {
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSuffix(p, "/tcp"), "/udp"))
	return n
}

// normalizePort writes "6650" as "6650/tcp".
func normalizePort(p string) string {
	if !strings.Contains(p, "/") {
		return p + "/tcp"
	}
	return p
}

// status is the container's state in Docker's words, for inspect and
// lists: created, running or exited.
func (c *container) status() string {
	switch {
	case c.running:
		return "running"
	case c.startCount == 0:
		return "created"
	default:
		return "exited"
	}
}

// statusLine is the list's human status: "Up 3 seconds", "Exited (143) 2
// seconds ago", "Created".
func (c *container) statusLine(now time.Time) string {
	switch c.status() {
	case "running":
		return fmt.Sprintf("Up %d seconds", int(now.Sub(c.started).Seconds()))
	case "exited":
		return fmt.Sprintf("Exited (%d) %d seconds ago", c.exitCode, int(now.Sub(c.finished).Seconds()))
	}
	return "Created"
}
