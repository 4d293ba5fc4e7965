package dockerapi

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// APIVersion is the Docker Engine API version the server speaks.
const APIVersion = "1.47"

// ReadyLine is written to a container's log once its broker answers on its
// admin API: it carries the words Testcontainers' Pulsar modules wait for
// ("Successfully updated the policies on namespace public/default").
const ReadyLine = "pulsarsim: the broker is ready: Successfully updated the policies on namespace public/default\n"

// Server serves the Docker Engine API over its containers.
type Server struct {
	// Runtime runs each container's broker.
	Runtime Runtime
	// Images are further image repositories served as Pulsar images.
	Images []string
	// DataDir holds the containers' data directories (a temporary
	// directory when empty).
	DataDir string

	mu         sync.Mutex
	containers map[string]*container // by id
	execs      map[string]*execState
	networks   map[string]network
	handler    http.Handler
	once       sync.Once
}

// execState is an exec made in a container: its command and, once run,
// its exit code.
type execState struct {
	container *container
	cmd       []string
	ran       bool
	exitCode  int
}

// network is a network made through the API: only its name and id.
type network struct {
	ID, Name string
	Labels   map[string]string
}

// ServeHTTP answers one request of the Docker Engine API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.once.Do(s.init)
	s.handler.ServeHTTP(w, r)
}

// Serve answers on ln until it is closed.
func (s *Server) Serve(ln net.Listener) error {
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// Close stops every running container and waits for each to end.
func (s *Server) Close() {
	s.mu.Lock()
	var procs []Process
	for _, c := range s.containers {
		if c.running && c.proc != nil {
			procs = append(procs, c.proc)
		}
	}
	s.mu.Unlock()
	for _, p := range procs {
		p.Signal("SIGTERM")
	}
	for _, p := range procs {
		select {
		case <-p.Done():
		case <-time.After(10 * time.Second):
			p.Signal("SIGKILL")
			<-p.Done()
		}
	}
}

// versionPrefix matches the /v1.47 that opens most request paths.
var versionPrefix = regexp.MustCompile(`^/v[0-9]+\.[0-9]+/`)

func (s *Server) init() {
	s.containers = map[string]*container{}
	s.execs = map[string]*execState{}
	s.networks = map[string]network{}
	bridge := network{ID: randomID(), Name: "bridge"}
	s.networks[bridge.ID] = bridge
	m := http.NewServeMux()
	m.HandleFunc("GET /_ping", s.ping)
	m.HandleFunc("HEAD /_ping", s.ping)
	m.HandleFunc("GET /version", s.version)
	m.HandleFunc("GET /info", s.info)
	m.HandleFunc("GET /images/json", s.listImages)
	m.HandleFunc("GET /images/{name...}", s.inspectImage)
	m.HandleFunc("POST /images/create", s.pullImage)
	m.HandleFunc("POST /containers/create", s.createContainer)
	m.HandleFunc("GET /containers/json", s.listContainers)
	m.HandleFunc("GET /containers/{id}/json", s.inspectContainer)
	m.HandleFunc("POST /containers/{id}/start", s.startContainer)
	m.HandleFunc("POST /containers/{id}/stop", s.stopContainer)
	m.HandleFunc("POST /containers/{id}/restart", s.restartContainer)
	m.HandleFunc("POST /containers/{id}/kill", s.killContainer)
	m.HandleFunc("POST /containers/{id}/wait", s.waitContainer)
	m.HandleFunc("POST /containers/{id}/attach", s.attachContainer)
	m.HandleFunc("POST /containers/{id}/resize", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	m.HandleFunc("DELETE /containers/{id}", s.removeContainer)
	m.HandleFunc("GET /containers/{id}/logs", s.containerLogs)
	m.HandleFunc("POST /containers/{id}/exec", s.createExec)
	m.HandleFunc("POST /exec/{id}/start", s.startExec)
	m.HandleFunc("GET /exec/{id}/json", s.inspectExec)
	m.HandleFunc("GET /networks", s.listNetworks)
	m.HandleFunc("GET /networks/{id}", s.inspectNetwork)
	m.HandleFunc("POST /networks/create", s.createNetwork)
	m.HandleFunc("DELETE /networks/{id}", s.removeNetwork)
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotImplemented, "pulsarsim serves no "+r.Method+" "+r.URL.Path+": it runs Pulsar containers only")
	})
	s.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.URL.Path = "/" + versionPrefix.ReplaceAllString(r.URL.Path, "")
		r.URL.Path = "/" + strings.TrimLeft(r.URL.Path, "/")
		m.ServeHTTP(w, r)
	})
}

// queryBool reads a boolean query parameter as Docker does: 1, true,
// True... are true.
func queryBool(r *http.Request, name string) bool {
	v, err := strconv.ParseBool(r.URL.Query().Get(name))
	return err == nil && v
}

// apiError answers Docker's error body.
func apiError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

// reply answers v as JSON with status.
func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func randomID() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Server) ping(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Api-Version", APIVersion)
	w.Header().Set("Docker-Experimental", "false")
	w.Header().Set("Ostype", "linux")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if r.Method != http.MethodHead {
		io.WriteString(w, "OK")
	}
}

func (s *Server) version(w http.ResponseWriter, r *http.Request) {
	reply(w, http.StatusOK, map[string]any{
		"Platform":      map[string]string{"Name": "pulsarsim"},
		"Version":       "27.3.1",
		"ApiVersion":    APIVersion,
		"MinAPIVersion": "1.24",
		"Os":            "linux",
		"Arch":          "amd64",
		"KernelVersion": "pulsarsim",
	})
}

func (s *Server) info(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	running, stopped := 0, 0
	for _, c := range s.containers {
		if c.running {
			running++
		} else {
			stopped++
		}
	}
	s.mu.Unlock()
	host, _ := os.Hostname()
	reply(w, http.StatusOK, map[string]any{
		"ID":                 "pulsarsim",
		"Name":               host,
		"ServerVersion":      "27.3.1",
		"OperatingSystem":    "pulsarsim (no Docker: Pulsar images run as pulsarsim brokers)",
		"OSType":             "linux",
		"Architecture":       "x86_64",
		"Containers":         running + stopped,
		"ContainersRunning":  running,
		"ContainersStopped":  stopped,
		"Images":             1,
		"Driver":             "pulsarsim",
		"DockerRootDir":      "/var/lib/docker",
		"NCPU":               1,
		"MemTotal":           int64(8 << 30),
		"Labels":             []string{},
		"SecurityOptions":    []string{},
		"IndexServerAddress": "https://index.docker.io/v1/",
	})
}

// imageDoc is an image's inspect body.
func imageDoc(name string) map[string]any {
	return map[string]any{
		"Id":           "sha256:" + strings.Repeat("0", 64),
		"RepoTags":     []string{name},
		"RepoDigests":  []string{},
		"Created":      "2025-01-01T00:00:00Z",
		"Size":         0,
		"Architecture": "amd64",
		"Os":           "linux",
		"Config": map[string]any{
			"ExposedPorts": map[string]any{"6650/tcp": map[string]any{}, "8080/tcp": map[string]any{}},
			"Env":          []string{},
			"Labels":       map[string]string{},
		},
	}
}

func (s *Server) listImages(w http.ResponseWriter, r *http.Request) {
	reply(w, http.StatusOK, []any{})
}

func (s *Server) inspectImage(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimSuffix(r.PathValue("name"), "/json")
	if !s.servedImage(name) {
		apiError(w, http.StatusNotFound, "No such image: "+name)
		return
	}
	reply(w, http.StatusOK, imageDoc(name))
}

func (s *Server) pullImage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	image := q.Get("fromImage")
	if tag := q.Get("tag"); tag != "" && !strings.Contains(image, "@") {
		image += ":" + tag
	}
	if !s.servedImage(image) {
		apiError(w, http.StatusNotFound, "pull access denied for "+image+": pulsarsim runs Pulsar images (apachepulsar/pulsar) only")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.Encode(map[string]string{"status": "Pulling from " + image})
	enc.Encode(map[string]string{"status": "Status: Image is up to date for " + image + " (served by pulsarsim)"})
}

// servedImage reports whether the server runs containers of image: Pulsar
// images and Testcontainers' reaper.
func (s *Server) servedImage(image string) bool {
	return pulsarImage(image, s.Images) || reaperImage(image)
}

// createBody is the part of a container's creation that matters here.
type createBody struct {
	Image        string
	Tty          bool
	Cmd          []string
	Entrypoint   []string
	Env          []string
	Labels       map[string]string
	ExposedPorts map[string]struct{}
	HostConfig   struct {
		PortBindings    map[string][]struct{ HostIP, HostPort string }
		PublishAllPorts bool
		AutoRemove      bool
	}
}

func (s *Server) createContainer(w http.ResponseWriter, r *http.Request) {
	var body createBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		apiError(w, http.StatusBadRequest, "invalid JSON: "+err.Error())
		return
	}
	if !s.servedImage(body.Image) {
		apiError(w, http.StatusNotFound, "No such image: "+body.Image+" (pulsarsim runs Pulsar images only)")
		return
	}
	name := strings.TrimPrefix(r.URL.Query().Get("name"), "/")
	id := randomID()
	if name == "" {
		name = "pulsarsim-" + id[:12]
	}
	c := &container{
		id: id, name: name, image: body.Image, cmd: body.Cmd, env: body.Env,
		labels: body.Labels, ports: map[string]int{}, created: time.Now(), log: newLog(),
		reaper: reaperImage(body.Image), autoRemove: body.HostConfig.AutoRemove,
		tty: body.Tty, changed: make(chan struct{}),
	}
	if c.labels == nil {
		c.labels = map[string]string{}
	}
	exposed := map[string]bool{}
	for p := range body.ExposedPorts {
		exposed[normalizePort(p)] = true
	}
	for p := range body.HostConfig.PortBindings {
		exposed[normalizePort(p)] = true
	}
	for p := range exposed {
		c.exposed = append(c.exposed, p)
	}
	sort.Strings(c.exposed)
	for p, bindings := range body.HostConfig.PortBindings {
		for _, b := range bindings {
			if n, err := strconv.Atoi(b.HostPort); err == nil && n > 0 {
				c.ports[normalizePort(p)] = n
			}
		}
	}
	for _, p := range c.exposed {
		if c.ports[p] == 0 {
			n, err := freePort()
			if err != nil {
				apiError(w, http.StatusInternalServerError, "no free port: "+err.Error())
				return
			}
			c.ports[p] = n
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, other := range s.containers {
		if other.name == name {
			apiError(w, http.StatusConflict, fmt.Sprintf("Conflict. The container name \"/%s\" is already in use by container \"%s\". You have to remove (or rename) that container to be able to reuse that name.", name, other.id))
			return
		}
	}
	s.containers[id] = c
	reply(w, http.StatusCreated, map[string]any{"Id": id, "Warnings": []string{}})
}

// freePort returns a port nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// find returns the container an id, id prefix or name names. The caller
// holds s.mu.
func (s *Server) findLocked(ref string) *container {
	ref = strings.TrimPrefix(ref, "/")
	if c := s.containers[ref]; c != nil {
		return c
	}
	for _, c := range s.containers {
		if c.name == ref || (len(ref) >= 4 && strings.HasPrefix(c.id, ref)) {
			return c
		}
	}
	return nil
}

// withContainer runs fn on the container the request names, under s.mu,
// or answers 404.
func (s *Server) withContainer(w http.ResponseWriter, r *http.Request, fn func(c *container)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.findLocked(r.PathValue("id"))
	if c == nil {
		apiError(w, http.StatusNotFound, "No such container: "+r.PathValue("id"))
		return
	}
	fn(c)
}

func (s *Server) portsDoc(c *container) map[string]any {
	ports := map[string]any{}
	for _, p := range c.exposed {
		if c.running {
			ports[p] = []map[string]string{{"HostIp": "0.0.0.0", "HostPort": strconv.Itoa(c.ports[p])}}
		} else {
			ports[p] = nil
		}
	}
	return ports
}

func (s *Server) inspectDoc(c *container) map[string]any {
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "0001-01-01T00:00:00Z"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	exposed := map[string]any{}
	bindings := map[string]any{}
	for _, p := range c.exposed {
		exposed[p] = map[string]any{}
		bindings[p] = []map[string]string{{"HostIp": "", "HostPort": strconv.Itoa(c.ports[p])}}
	}
	pid := 0
	if c.running {
		pid = 1
	}
	return map[string]any{
		"Id":      c.id,
		"Name":    "/" + c.name,
		"Created": ts(c.created),
		"Path":    firstOr(c.cmd, "bin/pulsar"),
		"Args":    restOf(c.cmd),
		"Image":   "sha256:" + strings.Repeat("0", 64),
		"State": map[string]any{
			"Status": c.status(), "Running": c.running, "Paused": false, "Restarting": false,
			"OOMKilled": false, "Dead": false, "Pid": pid, "ExitCode": c.exitCode, "Error": "",
			"StartedAt": ts(c.started), "FinishedAt": ts(c.finished),
		},
		"RestartCount": 0,
		"Config": map[string]any{
			"Hostname": c.id[:12], "Image": c.image, "Cmd": c.cmd, "Env": c.env,
			"Labels": c.labels, "ExposedPorts": exposed,
		},
		"HostConfig": map[string]any{"PortBindings": bindings, "NetworkMode": "bridge"},
		"NetworkSettings": map[string]any{
			"Ports":     s.portsDoc(c),
			"IPAddress": "127.0.0.1", "Gateway": "127.0.0.1",
			"Networks": map[string]any{"bridge": map[string]any{
				"IPAddress": "127.0.0.1", "Gateway": "127.0.0.1", "NetworkID": "bridge",
				"Aliases": []string{c.name},
			}},
		},
	}
}

func firstOr(xs []string, def string) string {
	if len(xs) == 0 {
		return def
	}
	return xs[0]
}

func restOf(xs []string) []string {
	if len(xs) < 2 {
		return []string{}
	}
	return xs[1:]
}

func (s *Server) inspectContainer(w http.ResponseWriter, r *http.Request) {
	s.withContainer(w, r, func(c *container) { reply(w, http.StatusOK, s.inspectDoc(c)) })
}

// filters are the list filters: name, id, label, status.
type filters map[string][]string

func parseFilters(raw string) filters {
	f := filters{}
	if raw == "" {
		return f
	}
	// Both {"name":["x"]} and {"name":{"x":true}} are Docker's forms.
	var lists map[string][]string
	if json.Unmarshal([]byte(raw), &lists) == nil {
		return lists
	}
	var sets map[string]map[string]bool
	if json.Unmarshal([]byte(raw), &sets) == nil {
		for k, vs := range sets {
			for v := range vs {
				f[k] = append(f[k], v)
			}
		}
	}
	return f
}

// matches reports whether c passes every filter: one of the names, ids or
// states given, and every label.
func (f filters) matches(c *container) bool {
	for _, v := range f["label"] {
		k, val, hasVal := strings.Cut(v, "=")
		if got, has := c.labels[k]; !has || (hasVal && got != val) {
			return false
		}
	}
	for key, values := range f {
		if key == "label" {
			continue
		}
		ok := false
		for _, v := range values {
			switch key {
			case "name":
				ok = ok || strings.Contains(c.name, strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(v, "^"), "$"), "/"))
			case "id":
				ok = ok || strings.HasPrefix(c.id, v)
			case "status":
				ok = ok || c.status() == v
			default:
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func (s *Server) listContainers(w http.ResponseWriter, r *http.Request) {
	all := queryBool(r, "all")
	f := parseFilters(r.URL.Query().Get("filters"))
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	now := time.Now()
	var cs []*container
	for _, c := range s.containers {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b *container) int { return b.created.Compare(a.created) })
	for _, c := range cs {
		if !c.running && !all {
			continue
		}
		if !f.matches(c) {
			continue
		}
		var ports []map[string]any
		for _, p := range c.exposed {
			port := map[string]any{"PrivatePort": portNumber(p), "Type": "tcp"}
			if c.running {
				port["PublicPort"] = c.ports[p]
				port["IP"] = "0.0.0.0"
			}
			ports = append(ports, port)
		}
		out = append(out, map[string]any{
			"Id": c.id, "Names": []string{"/" + c.name}, "Image": c.image, "ImageID": "sha256:" + strings.Repeat("0", 64),
			"Command": strings.Join(c.cmd, " "), "Created": c.created.Unix(), "State": c.status(),
			"Status": c.statusLine(now), "Ports": ports, "Labels": c.labels,
			"HostConfig": map[string]string{"NetworkMode": "bridge"},
			"NetworkSettings": map[string]any{"Networks": map[string]any{"bridge": map[string]any{
				"IPAddress": "127.0.0.1", "Gateway": "127.0.0.1", "NetworkID": "bridge",
			}}},
		})
	}
	reply(w, http.StatusOK, out)
}

func (s *Server) startContainer(w http.ResponseWriter, r *http.Request) {
	s.withContainer(w, r, func(c *container) {
		if c.running {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if err := s.startLocked(c); err != nil {
			apiError(w, http.StatusInternalServerError, "cannot start container "+c.name+": "+err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// startLocked starts c's broker and watches for its end. The caller holds
// s.mu.
func (s *Server) startLocked(c *container) error {
	if c.dataDir == "" {
		base := s.DataDir
		if base == "" {
			base = os.TempDir()
		}
		dir, err := os.MkdirTemp(base, "pulsarsim-container-"+c.id[:12]+"-")
		if err != nil {
			return err
		}
		c.dataDir = filepath.Clean(dir)
	}
	var p Process
	var err error
	if c.reaper {
		p, err = s.startReaper(c)
	} else {
		p, err = s.Runtime.Start(Spec{
			Name: c.name, BrokerPort: c.ports["6650/tcp"], WebPort: c.ports["8080/tcp"],
			Conf: confFromEnv(c.env), DataDir: c.dataDir, Out: c.log,
		})
	}
	if err != nil {
		return err
	}
	c.proc, c.running, c.started, c.startCount = p, true, time.Now(), c.startCount+1
	c.changedLocked()
	if !c.reaper {
		go s.announceReady(c, p)
	}
	go func() {
		<-p.Done()
		s.settle(c, p)
		if c.autoRemove {
			s.forget(c)
		}
	}()
	return nil
}

// announceReady writes ReadyLine to the container's log once its broker
// answers on its admin API (or its binary port, without one).
func (s *Server) announceReady(c *container, p Process) {
	addr := "127.0.0.1:" + strconv.Itoa(c.ports["8080/tcp"])
	probe := func() bool {
		if c.ports["8080/tcp"] == 0 {
			conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(c.ports["6650/tcp"]), time.Second)
			if err == nil {
				conn.Close()
			}
			return err == nil
		}
		resp, err := http.Get("http://" + addr + "/admin/v2/clusters")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	for {
		select {
		case <-p.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
		if probe() {
			c.log.Stdout().Write([]byte(ReadyLine))
			return
		}
	}
}

// stopProcess sends p SIGTERM, and SIGKILL after timeout, and returns once
// it has ended.
func stopProcess(p Process, timeout time.Duration) {
	p.Signal("SIGTERM")
	select {
	case <-p.Done():
	case <-time.After(timeout):
		p.Signal("SIGKILL")
		<-p.Done()
	}
}

// stopTimeout reads ?t= (seconds; Docker's default 10).
func stopTimeout(r *http.Request) time.Duration {
	if n, err := strconv.Atoi(r.URL.Query().Get("t")); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	return 10 * time.Second
}

// running returns the container the request names, its process when it
// runs (nil otherwise), and false when there is no such container.
func (s *Server) running(r *http.Request) (*container, Process, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.findLocked(r.PathValue("id"))
	if c == nil {
		return nil, nil, false
	}
	if !c.running {
		return c, nil, true
	}
	return c, c.proc, true
}

func (s *Server) stopContainer(w http.ResponseWriter, r *http.Request) {
	c, p, ok := s.running(r)
	if !ok {
		apiError(w, http.StatusNotFound, "No such container: "+r.PathValue("id"))
		return
	}
	if p == nil {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	stopProcess(p, stopTimeout(r))
	s.settle(c, p)
	w.WriteHeader(http.StatusNoContent)
}

// settle records p's end on c at once, so that an inspect right after a
// stop or kill sees the container exited.
func (s *Server) settle(c *container, p Process) {
	<-p.Done()
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.proc == p && c.running {
		c.running, c.exitCode, c.finished = false, p.ExitCode(), time.Now()
		c.changedLocked()
	}
}

func (s *Server) restartContainer(w http.ResponseWriter, r *http.Request) {
	c, p, ok := s.running(r)
	if !ok {
		apiError(w, http.StatusNotFound, "No such container: "+r.PathValue("id"))
		return
	}
	if p != nil {
		stopProcess(p, stopTimeout(r))
		s.settle(c, p)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.startLocked(c); err != nil {
		apiError(w, http.StatusInternalServerError, "cannot start container "+c.name+": "+err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) killContainer(w http.ResponseWriter, r *http.Request) {
	c, p, ok := s.running(r)
	if !ok {
		apiError(w, http.StatusNotFound, "No such container: "+r.PathValue("id"))
		return
	}
	if p == nil {
		apiError(w, http.StatusConflict, "Cannot kill container: "+c.id+": container "+c.id+" is not running")
		return
	}
	sig := strings.ToUpper(r.URL.Query().Get("signal"))
	switch sig {
	case "", "KILL", "SIGKILL", "9":
		p.Signal("SIGKILL")
		s.settle(c, p)
	case "TERM", "SIGTERM", "15", "INT", "SIGINT", "2":
		p.Signal("SIGTERM")
	default:
		// Other signals do nothing to a broker.
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) waitContainer(w http.ResponseWriter, r *http.Request) {
	cond := r.URL.Query().Get("condition")
	s.mu.Lock()
	c := s.findLocked(r.PathValue("id"))
	if c == nil {
		s.mu.Unlock()
		apiError(w, http.StatusNotFound, "No such container: "+r.PathValue("id"))
		return
	}
	starts, wasRunning := c.startCount, c.running
	s.mu.Unlock()
	// done reports whether the condition holds: not-running (the default)
	// at once for a container that does not run; next-exit at the end of
	// the run going on, or of the next one; removed once it is removed.
	done := func() bool {
		switch cond {
		case "removed":
			return c.removed
		case "next-exit":
			return !c.running && (wasRunning || c.startCount > starts)
		default:
			return !c.running
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	for {
		s.mu.Lock()
		if done() {
			code := c.exitCode
			s.mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"StatusCode": code})
			return
		}
		changed := c.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		}
	}
}

// attachContainer streams the container's output from now on (from its
// start with logs=1) over the hijacked connection, raw for a container
// with a TTY, else multiplexed, until the container's next run ends or
// it is removed. Its input is read and dropped: a broker reads none.
func (s *Server) attachContainer(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	c := s.findLocked(r.PathValue("id"))
	var starts int
	var wasRunning bool
	if c != nil {
		starts, wasRunning = c.startCount, c.running
	}
	s.mu.Unlock()
	if c == nil {
		apiError(w, http.StatusNotFound, "No such container: "+r.PathValue("id"))
		return
	}
	// Where the stream starts is fixed before the client hears the
	// upgrade: it starts the container right after.
	next := c.log.size()
	if queryBool(r, "logs") {
		next = 0
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		apiError(w, http.StatusInternalServerError, "cannot hijack the connection")
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	kind := "application/vnd.docker.multiplexed-stream"
	if c.tty {
		kind = "application/vnd.docker.raw-stream"
	}
	buf.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: " + kind + "\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
	if buf.Flush() != nil {
		return
	}
	go io.Copy(io.Discard, conn)
	for {
		frames, more := c.log.read(next)
		next += len(frames)
		for _, f := range frames {
			var err error
			if c.tty {
				_, err = buf.Write(f.data)
			} else {
				err = writeFrame(buf, f.stream, f.data)
			}
			if err != nil {
				return
			}
		}
		if buf.Flush() != nil {
			return
		}
		s.mu.Lock()
		ended := c.removed || (!c.running && (wasRunning || c.startCount > starts))
		changed := c.changed
		s.mu.Unlock()
		if ended && len(frames) == 0 {
			return
		}
		select {
		case <-more:
		case <-changed:
		}
	}
}

func (s *Server) removeContainer(w http.ResponseWriter, r *http.Request) {
	c, p, ok := s.running(r)
	if !ok {
		apiError(w, http.StatusNotFound, "No such container: "+r.PathValue("id"))
		return
	}
	if p != nil {
		if !queryBool(r, "force") {
			apiError(w, http.StatusConflict, "You cannot remove a running container "+c.id+". Stop the container before attempting removal or force remove")
			return
		}
		p.Signal("SIGKILL")
		s.settle(c, p)
	}
	s.forget(c)
	w.WriteHeader(http.StatusNoContent)
}

// writeFrame writes one frame of Docker's multiplexed stream: the stream,
// three zero bytes, the length (big endian) and the bytes.
func writeFrame(w io.Writer, stream byte, data []byte) error {
	var h [8]byte
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(data)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(data)
	return err
}

func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	c := s.findLocked(r.PathValue("id"))
	s.mu.Unlock()
	if c == nil {
		apiError(w, http.StatusNotFound, "No such container: "+r.PathValue("id"))
		return
	}
	q := r.URL.Query()
	want := func(stream byte) bool {
		if stream == 1 {
			return queryBool(r, "stdout")
		}
		return queryBool(r, "stderr")
	}
	follow := queryBool(r, "follow")
	stamps := queryBool(r, "timestamps")
	var since time.Time
	if v := q.Get("since"); v != "" {
		if sec, err := strconv.ParseFloat(v, 64); err == nil && sec > 0 {
			since = time.Unix(0, int64(sec*1e9))
		}
	}
	w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	next := 0
	for {
		frames, more := c.log.read(next)
		next += len(frames)
		for _, f := range frames {
			if !want(f.stream) || f.at.Before(since) {
				continue
			}
			data := f.data
			if stamps {
				data = append([]byte(f.at.UTC().Format(time.RFC3339Nano)+" "), data...)
			}
			if writeFrame(w, f.stream, data) != nil {
				return
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		if !follow {
			return
		}
		s.mu.Lock()
		gone := c.removed || (!c.running && c.startCount > 0)
		s.mu.Unlock()
		if gone && len(frames) == 0 {
			return
		}
		select {
		case <-more:
		case <-r.Context().Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (s *Server) createExec(w http.ResponseWriter, r *http.Request) {
	var body struct{ Cmd []string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		apiError(w, http.StatusBadRequest, "invalid JSON: "+err.Error())
		return
	}
	s.withContainer(w, r, func(c *container) {
		if !c.running {
			apiError(w, http.StatusConflict, "container "+c.id+" is not running")
			return
		}
		id := randomID()
		s.execs[id] = &execState{container: c, cmd: body.Cmd}
		reply(w, http.StatusCreated, map[string]string{"Id": id})
	})
}

// portCheck matches the command Testcontainers runs to see that a port
// listens inside a container, and captures the port.
var portCheck = regexp.MustCompile(`nc -vz -w 1 localhost ([0-9]+)`)

// runExec decides an exec's outcome: a port check succeeds when the
// container's broker listens on that port, anything else exits 126.
func (s *Server) runExec(e *execState) (int, string) {
	cmd := strings.Join(e.cmd, " ")
	if m := portCheck.FindStringSubmatch(cmd); m != nil {
		s.mu.Lock()
		host := e.container.ports[m[1]+"/tcp"]
		s.mu.Unlock()
		if host != 0 {
			if conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(host), time.Second); err == nil {
				conn.Close()
				return 0, ""
			}
		}
		return 1, ""
	}
	return 126, "pulsarsim: a Pulsar container here is a pulsarsim broker, with no shell or files to run " + strconv.Quote(cmd) + " in\n"
}

func (s *Server) startExec(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	e := s.execs[r.PathValue("id")]
	s.mu.Unlock()
	if e == nil {
		apiError(w, http.StatusNotFound, "No such exec instance: "+r.PathValue("id"))
		return
	}
	io.Copy(io.Discard, r.Body)
	code, stderr := s.runExec(e)
	s.mu.Lock()
	e.ran, e.exitCode = true, code
	s.mu.Unlock()
	var out io.Writer = w
	if r.Header.Get("Upgrade") != "" {
		hj, ok := w.(http.Hijacker)
		if !ok {
			apiError(w, http.StatusInternalServerError, "cannot hijack the connection")
			return
		}
		conn, buf, err := hj.Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		buf.WriteString("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.multiplexed-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n")
		out = buf
		defer buf.Flush()
	} else {
		w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
		w.WriteHeader(http.StatusOK)
	}
	if stderr != "" {
		writeFrame(out, 2, []byte(stderr))
	}
	if b, ok := out.(*bufio.ReadWriter); ok {
		b.Flush()
	}
}

func (s *Server) inspectExec(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.execs[r.PathValue("id")]
	if e == nil {
		apiError(w, http.StatusNotFound, "No such exec instance: "+r.PathValue("id"))
		return
	}
	reply(w, http.StatusOK, map[string]any{
		"ID": r.PathValue("id"), "Running": false, "ExitCode": e.exitCode, "ContainerID": e.container.id,
		"ProcessConfig": map[string]any{"entrypoint": firstOr(e.cmd, ""), "arguments": restOf(e.cmd)},
	})
}

func (s *Server) networkDoc(n network) map[string]any {
	return map[string]any{
		"Name": n.Name, "Id": n.ID, "Driver": "bridge", "Scope": "local", "Labels": n.Labels,
		"IPAM":       map[string]any{"Driver": "default", "Config": []map[string]string{{"Subnet": "127.0.0.0/8", "Gateway": "127.0.0.1"}}},
		"Containers": map[string]any{},
	}
}

func (s *Server) listNetworks(w http.ResponseWriter, r *http.Request) {
	f := parseFilters(r.URL.Query().Get("filters"))
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, n := range s.networks {
		ok := true
		for _, name := range f["name"] {
			ok = ok && n.Name == name
		}
		for _, id := range f["id"] {
			ok = ok && strings.HasPrefix(n.ID, id)
		}
		if ok {
			out = append(out, s.networkDoc(n))
		}
	}
	reply(w, http.StatusOK, out)
}

func (s *Server) findNetworkLocked(ref string) (network, bool) {
	for _, n := range s.networks {
		if n.ID == ref || n.Name == ref || (len(ref) >= 4 && strings.HasPrefix(n.ID, ref)) {
			return n, true
		}
	}
	return network{}, false
}

func (s *Server) inspectNetwork(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.findNetworkLocked(r.PathValue("id"))
	if !ok {
		apiError(w, http.StatusNotFound, "network "+r.PathValue("id")+" not found")
		return
	}
	reply(w, http.StatusOK, s.networkDoc(n))
}

func (s *Server) createNetwork(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name   string
		Labels map[string]string
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Name == "" {
		apiError(w, http.StatusBadRequest, "a network needs a name")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.findNetworkLocked(body.Name); ok {
		apiError(w, http.StatusConflict, "network with name "+body.Name+" already exists ("+n.ID+")")
		return
	}
	n := network{ID: randomID(), Name: body.Name, Labels: body.Labels}
	s.networks[n.ID] = n
	reply(w, http.StatusCreated, map[string]string{"Id": n.ID, "Warning": ""})
}

func (s *Server) removeNetwork(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.findNetworkLocked(r.PathValue("id"))
	if !ok || n.Name == "bridge" {
		apiError(w, http.StatusNotFound, "network "+r.PathValue("id")+" not found")
		return
	}
	delete(s.networks, n.ID)
	w.WriteHeader(http.StatusNoContent)
}
