// Package view is a live web view of a pulsarsim broker: its topics,
// subscriptions and consumers, each consumer's pending entries with their
// redelivery counts, the replay queues, the backlogs and the dead-letter
// copies, and for any message a picture of its life on a time axis, one lane
// per consumer. Pages are plain HTML, CSS and SVG rendered by the server from
// the broker's exported API and its event history; a small embedded script
// refreshes them as events arrive (server-sent events). Nothing is fetched
// from elsewhere.
//
// A broker of a cluster of several has its own view, which names it; its
// history may follow every broker of the cluster (History.Follow), so that
// a message's life shows each event's broker and the moves of its topic
// between them, and the topic page says which broker owns the topic's bundle
// and links to that broker's view. With several clusters over one
// configuration store, one history may follow every broker of every
// cluster: a message's life then shows, beside its own marks, the copies
// geo-replicators wrote of it on the other clusters, their deliveries and
// acknowledgements there, each mark naming its cluster (see Store).
//
// The same pictures make a self-contained HTML report (WriteReport), which
// testkit writes when a test fails.
package view

import (
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"sync"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
)

//go:embed assets
var assets embed.FS

// static serves the style sheet and the script.
var static, _ = fs.Sub(assets, "assets/static")

// Handler serves the view of one broker. Mount it under a path prefix with
// http.StripPrefix; its links are relative, so any prefix works.
type Handler struct {
	b   *broker.Broker
	h   *History
	mux *http.ServeMux

	cacheMu sync.Mutex
	cache   map[string]*topicLives // by topic, see topicLivesOf

	closeOnce sync.Once
	done      chan struct{}
}

// New returns the view of broker b, reading message lives from h. h should
// record from before the broker serves (see History); events it missed are
// missing from the pictures.
func New(b *broker.Broker, h *History) *Handler {
	v := &Handler{b: b, h: h, mux: http.NewServeMux(), cache: map[string]*topicLives{}, done: make(chan struct{})}
	v.mux.HandleFunc("GET /{$}", v.index)
	v.mux.HandleFunc("GET /topic", v.topic)
	v.mux.HandleFunc("GET /message", v.message)
	v.mux.HandleFunc("GET /report.html", v.report)
	v.mux.HandleFunc("GET /events", v.stream)
	v.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	return v
}

// Routes returns what puts the view on an admin port, as patterns and
// handlers for admin.WithHandler: the view under /view/, and the port's root
// leading to it (Pulsar's REST API has nothing there).
func (v *Handler) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"/view/":   http.StripPrefix("/view", v),
		"GET /{$}": http.RedirectHandler("/view/", http.StatusFound),
	}
}

// ServeHTTP serves the view's pages.
func (v *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { v.mux.ServeHTTP(w, r) }

// Close ends the live-update streams, so that an http.Server can shut down
// without waiting for them (see http.Server.RegisterOnShutdown).
func (v *Handler) Close() { v.closeOnce.Do(func() { close(v.done) }) }

// livePoll is how often a live-update stream looks for new events.
const livePoll = 250 * time.Millisecond

// stream streams the history's newest sequence number as server-sent events
// whenever it changes, and a comment now and then to keep the stream open.
func (v *Handler) stream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	tick := time.NewTicker(livePoll)
	defer tick.Stop()
	var sent uint64
	quiet := 0
	for {
		if last := v.h.Stats().Last; last != sent || quiet == 0 {
			fmt.Fprintf(w, "retry: 2000\ndata: %d\n\n", last)
			sent, quiet = last, 1
		} else if quiet++; quiet%60 == 0 {
			fmt.Fprint(w, ": still here\n\n")
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-v.done:
			return
		case <-tick.C:
		}
	}
}

// pages holds each page's template: the layout and the page's own part.
var pages = map[string]*template.Template{}

func init() {
	layout := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html", "assets/parts.html"))
	for _, p := range []string{"index", "topic", "message"} {
		pages[p] = template.Must(template.Must(layout.Clone()).ParseFS(assets, "assets/"+p+".html"))
	}
	pages["report"] = template.Must(template.New("report.html").Funcs(funcs).ParseFS(assets, "assets/report.html", "assets/parts.html"))
}

// render writes a page, or only its main part when the page's script asks
// for it to refresh itself.
func render(w http.ResponseWriter, r *http.Request, page string, data any) {
	name := "layout.html"
	if r.Header.Get("X-View-Part") == "main" {
		name = "main"
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := pages[page].ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
