package view

import (
	"cmp"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
)

// funcs are the helpers the templates use.
var funcs = template.FuncMap{
	"short":   shortTopic,
	"clock":   func(t time.Time) string { return t.Format("15:04:05.000") },
	"since":   since,
	"id":      func(id broker.MessageID) string { return fmt.Sprintf("%d:%d", id.Ledger, id.Entry) },
	"link":    link,
	"picture": Picture,
	"legend":  Legend,
	"add":     func(a, b int) int { return a + b },
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	},
	"preview": preview,
	"ago":     func(from, to time.Time) string { return since(to.Sub(from)) },
	"deliveriesOn": func(l *Life, sub string) int {
		n := 0
		for _, m := range l.Marks {
			if m.Kind == MarkDelivered && m.Subscription == sub {
				n++
			}
		}
		return n
	},
	"sub":        func(s broker.SubscriptionSnapshot, links bool) subView { return subView{s, links} },
	"stylesheet": stylesheet,
}

// subView is a subscription as the "sub" template shows it; Links is off in
// a report, which has no message pages to link to.
type subView struct {
	Sub   broker.SubscriptionSnapshot
	Links bool
}

// link returns path with the query made of the key and value pairs kv.
func link(path string, kv ...any) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(fmt.Sprint(kv[i]), fmt.Sprint(kv[i+1]))
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// preview shows a payload as text when it is printable, else as hex, cut
// to a few hundred bytes.
func preview(p []byte) string {
	const most = 300
	cut := ""
	if len(p) > most {
		p, cut = p[:most], fmt.Sprintf("… (%d bytes)", len(p))
	}
	s := string(p)
	printable := strings.ToValidUTF8(s, "") == s && !strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 && r != '\n' && r != '\t'
	})
	if !printable {
		s = fmt.Sprintf("% x", p)
	}
	return s + cut
}

// common is what every page shows in its frame.
type common struct {
	Title     string
	BrokerURL string
	// Node says which broker of its cluster serves the page; nil for a lone
	// broker.
	Node    *Node
	History Stats
	Now     time.Time
	// Topic is the topic the page is about, if any, for the breadcrumb.
	Topic string
}

// Node is a broker of a cluster of several, as a page or a report names it.
type Node struct {
	// Index is the broker's index in its cluster (from 0), Of the number
	// of brokers in the cluster.
	Index, Of int
	// URL is its service URL; LoadManager the cluster's load manager
	// ("modular" or "extensible").
	URL, LoadManager string
}

// String names the broker: "broker 1 of 3".
func (n *Node) String() string { return fmt.Sprintf("broker %d of %d", n.Index, n.Of) }

// nodeOf returns b as a broker of its cluster, nil for a lone broker (or a
// cluster of one).
func nodeOf(b *broker.Broker) *Node {
	bs := b.Brokers()
	if len(bs) <= 1 {
		return nil
	}
	lm := "modular"
	if b.LoadManager() == broker.ExtensibleLoadManager {
		lm = "extensible"
	}
	return &Node{Index: b.Node(), Of: len(bs), URL: b.URL(), LoadManager: lm}
}

// Owner is the broker that owns a topic's bundle, as a cluster's page says.
type Owner struct {
	// Index is the owner's index in the cluster; Self is set when it is the
	// broker serving the page; Alive is false for a broker stopped or
	// crashed (whose bundles are its own until the ownership timeout).
	Index       int
	Self, Alive bool
	// URL is its service URL, View the address of the topic's page in its
	// web view ("" when its web service URL is not known).
	URL, View string
}

// ownerOf returns the owner of topic's bundle in b's cluster of several
// brokers; nil for a lone broker, or when nobody owns the bundle.
func ownerOf(b *broker.Broker, topic string) *Owner {
	bs := b.Brokers()
	if len(bs) <= 1 {
		return nil
	}
	bd, err := b.BundleOf(topic)
	if err != nil {
		return nil
	}
	info, ok := b.BundleOwner(bd)
	if !ok {
		return nil
	}
	o := &Owner{Index: -1, Self: info.Self, Alive: info.Alive, URL: info.URL}
	for i, other := range bs {
		if other.ID == info.ID {
			o.Index = i
		}
	}
	if info.WebURL != "" {
		o.View = strings.TrimSuffix(info.WebURL, "/") + "/view/" + link("topic", "name", topic)
	}
	return o
}

// events returns the history's events, once every event the broker (and
// every broker the history follows) emitted so far has reached it.
func (v *Handler) events() []broker.Event {
	v.deliver()
	return v.h.Events()
}

// deliver waits until the events emitted so far have reached the history.
func (v *Handler) deliver() {
	v.b.DeliverEvents()
	v.h.Deliver()
}

func (v *Handler) common(title, topic string) common {
	return common{Title: title, BrokerURL: v.b.URL(), Node: nodeOf(v.b), History: v.h.Stats(), Now: v.b.Clock().Now(), Topic: topic}
}

// TopicState is one topic with its subscriptions, as a page or a report
// shows them.
type TopicState struct {
	broker.TopicSnapshot
	Subs []broker.SubscriptionSnapshot
	// Backlog sums the subscriptions' backlogs.
	Backlog int64
	// Copies counts the dead-letter and retry-letter copies made of the
	// topic's messages, as far as the history reaches.
	Copies int
	// Owner is, in a cluster of several brokers, the broker owning the
	// topic's bundle; nil for a lone broker.
	Owner *Owner
}

// topicStates returns the state of the named topics (all when names is nil).
func topicStates(b *broker.Broker, names []string, copies map[string]int) []TopicState {
	if names == nil {
		names = b.Topics()
	}
	clustered := len(b.Brokers()) > 1
	var out []TopicState
	for _, name := range names {
		ts, ok := b.Topic(name)
		if !ok {
			continue
		}
		st := TopicState{TopicSnapshot: ts, Copies: copies[name]}
		if clustered {
			st.Owner = ownerOf(b, name)
		}
		for _, sn := range ts.Subscriptions {
			if s, ok := b.Subscription(name, sn); ok {
				st.Subs = append(st.Subs, s)
				st.Backlog += s.Backlog
			}
		}
		out = append(out, st)
	}
	return out
}

// copiesPerTopic counts, per original topic, the dead-letter and retry-letter
// copies among the events (read from store for the batched ones).
func copiesPerTopic(events []broker.Event, store Store) map[string]int {
	out := map[string]int{}
	local, geo := "", false
	if store != nil {
		local, geo = geoOf(store)
	}
	for i := range events {
		if e := &events[i]; e.Kind == broker.EventPublished && e.Properties != nil && (!geo || e.Cluster == local) {
			copies, _ := copiesIn(e, store, true)
			for _, props := range copies {
				if k, _, ok := originOf(props); ok {
					out[k.Topic]++
				}
			}
		}
	}
	return out
}

type indexPage struct {
	common
	Topics []TopicState
	// Elsewhere are, in a cluster, the topics of the store that another
	// broker serves (or would load), with their owner.
	Elsewhere []elsewhere
}

// elsewhere is a topic another broker of the cluster serves.
type elsewhere struct {
	Name  string
	Owner *Owner
}

func (v *Handler) index(w http.ResponseWriter, r *http.Request) {
	p := indexPage{
		common: v.common("pulsarsim", ""),
		Topics: topicStates(v.b, nil, copiesPerTopic(v.events(), v.b)),
	}
	if p.Node != nil {
		served := map[string]bool{}
		for _, t := range p.Topics {
			served[t.Name] = true
		}
		for _, name := range v.b.Topics() {
			if !served[name] {
				p.Elsewhere = append(p.Elsewhere, elsewhere{name, ownerOf(v.b, name)})
			}
		}
	}
	render(w, r, "index", p)
}

// pageSize is the number of messages a topic page lists at once, and
// copiedShown the number of its latest dead-lettered messages it shows.
const (
	pageSize    = 50
	copiedShown = 20
)

// msgRow is one message in a topic's list.
type msgRow struct {
	*Life
	Deliveries int
	MaxCount   int32
}

type topicPage struct {
	common
	State TopicState
	// Served is set when this broker serves the topic (it has its state).
	Served bool
	// Lives counts the topic's messages the history holds.
	Lives int
	// Copied lists the latest messages with dead-letter or retry-letter
	// copies, at most copiedShown of them; CopiedAll counts them all.
	Copied    []*Life
	CopiedAll int
	Rows      []msgRow
	// Sort and Filter are the list's order and filter; Matching counts the
	// messages the filter keeps; From is the index of the first row shown.
	Sort, Filter string
	Matching     int
	From         int
	Sorts        []string
	Filters      []string
}

// Sort orders and filters of a topic's message list.
var (
	sorts   = []string{"entry", "busiest", "recent"}
	filters = []string{"all", "redelivered", "dead-lettered", "unsettled"}
)

func (v *Handler) topic(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	tn, err := broker.ParseTopicName(name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	full := tn.String()
	states := topicStates(v.b, []string{full}, nil)
	lives, done := v.topicLivesOf(full)
	defer done()
	served := len(states) > 0
	if !served {
		// In a cluster, a topic another broker serves (or that nobody
		// serves, between a crash and the takeover) has its page here
		// too: its messages' lives (the history has the whole cluster's
		// events when it follows every broker) and where it is served.
		if nodeOf(v.b) == nil || len(lives) == 0 && !slices.Contains(v.b.Topics(), full) {
			http.Error(w, "no topic "+full, http.StatusNotFound)
			return
		}
		states = []TopicState{{TopicSnapshot: broker.TopicSnapshot{Name: full}, Owner: ownerOf(v.b, full)}}
	}
	p := topicPage{common: v.common(shortTopic(full), full), State: states[0], Lives: len(lives),
		Sort: pick(r.URL.Query().Get("sort"), sorts), Filter: pick(r.URL.Query().Get("filter"), filters),
		Sorts: sorts, Filters: filters, Served: served}
	p.State.Copies = 0
	rows := make([]msgRow, 0, len(lives))
	for _, l := range lives {
		p.State.Copies += len(l.Copies)
		if len(l.Copies) > 0 {
			p.Copied = append(p.Copied, l)
			p.CopiedAll++
		}
		row := msgRow{Life: l}
		row.Deliveries, row.MaxCount = l.Deliveries()
		if keep(row, p.Filter) {
			rows = append(rows, row)
		}
	}
	if len(p.Copied) > copiedShown {
		p.Copied = p.Copied[len(p.Copied)-copiedShown:]
	}
	sortRows(rows, p.Sort)
	p.Matching = len(rows)
	p.From, _ = strconv.Atoi(r.URL.Query().Get("from"))
	p.From = max(0, min(p.From, len(rows)-1))
	p.Rows = rows[p.From:min(p.From+pageSize, len(rows))]
	render(w, r, "topic", p)
}

// pick returns s when it is one of choices, else the first choice.
func pick(s string, choices []string) string {
	if slices.Contains(choices, s) {
		return s
	}
	return choices[0]
}

// keep reports whether a message passes a list filter.
func keep(r msgRow, filter string) bool {
	switch filter {
	case "redelivered":
		return r.MaxCount > 0 || r.Deliveries > len(r.Subs)
	case "dead-lettered":
		return len(r.Copies) > 0
	case "unsettled":
		for _, s := range r.Subs {
			if s.Outcome.Kind == OutcomeHeld || s.Outcome.Kind == OutcomeWaiting {
				return true
			}
		}
		return false
	}
	return true
}

func sortRows(rows []msgRow, by string) {
	switch by {
	case "entry":
		slices.SortStableFunc(rows, func(a, b msgRow) int {
			return cmp.Or(cmp.Compare(a.Ledger, b.Ledger), cmp.Compare(a.Entry, b.Entry))
		})
	case "busiest":
		slices.SortStableFunc(rows, func(a, b msgRow) int { return cmp.Compare(len(b.Marks), len(a.Marks)) })
	case "recent":
		slices.SortStableFunc(rows, func(a, b msgRow) int { return b.End().Compare(a.End()) })
	}
}

type messagePage struct {
	common
	Life *Life
	// Stored are the entry's messages (several for a batch), when the topic
	// still holds it.
	Stored []broker.Message
	// Standing says where the entry is now on each subscription.
	Standing []standing
	// Served is set when this broker serves the topic; in a cluster, Owner
	// is the broker that owns its bundle when another does.
	Served bool
	Owner  *Owner
	// CopyOf is, when the entry is a geo-replicator's copy of a message of
	// another cluster, its publish mark (naming that cluster and the
	// original's entry): Life is then the original's, with its copies.
	CopyOf Mark
}

// standing is where an entry stands now on one subscription.
type standing struct {
	Sub, Where string
	Class      string
}

func (v *Handler) message(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tn, err := broker.ParseTopicName(q.Get("topic"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var k Key
	if _, err := fmt.Sscanf(q.Get("id"), "%d:%d", &k.Ledger, &k.Entry); err != nil {
		http.Error(w, "id: want ledger:entry", http.StatusBadRequest)
		return
	}
	k.Topic = tn.String()
	events := v.events()
	l := LifeOf(events, v.b, k)
	if l == nil {
		l = &Life{Key: k} // forgotten by a bounded history, or never there
	}
	p := messagePage{common: v.common(fmt.Sprintf("%d:%d · %s", k.Ledger, k.Entry, shortTopic(k.Topic)), k.Topic), Life: l}
	if pub := l.Published; pub.ReplicatedFrom != "" {
		// A replicator's copy: the picture is the original's life, which
		// holds the copy's, and those of its other copies.
		o := Key{Topic: k.Topic}
		if pub.ReplicatedFrom != v.b.ClusterName() {
			o.Cluster = pub.ReplicatedFrom
		}
		if _, err := fmt.Sscanf(pub.Source, "%d:%d", &o.Ledger, &o.Entry); err == nil {
			if ol := LifeOf(events, v.b, o); ol != nil && len(ol.Replicas) > 0 {
				p.Life, p.CopyOf = ol, pub
			}
		}
	}
	if e, err := v.b.Entry(k.Topic, broker.MessageID{Ledger: k.Ledger, Entry: k.Entry, BatchIndex: -1}); err == nil {
		p.Stored = e.Messages
	}
	if len(l.Marks) == 0 && len(p.Stored) == 0 {
		http.Error(w, "neither the topic nor the history holds message "+k.String(), http.StatusNotFound)
		return
	}
	if st := topicStates(v.b, []string{k.Topic}, nil); len(st) > 0 {
		p.Served = true
		for _, s := range st[0].Subs {
			p.Standing = append(p.Standing, standingOf(s, k))
		}
	} else if p.Node != nil {
		p.Owner = ownerOf(v.b, k.Topic)
	}
	render(w, r, "message", p)
}

// standingOf says where entry k is on subscription s now.
func standingOf(s broker.SubscriptionSnapshot, k Key) standing {
	at := func(id broker.MessageID) bool { return id.Ledger == k.Ledger && id.Entry == k.Entry }
	st := standing{Sub: s.Name}
	for _, c := range s.Consumers {
		for _, p := range c.Pending {
			if at(p.ID) {
				st.Where, st.Class = fmt.Sprintf("pending at %s with redelivery count %d", c.Name, p.RedeliveryCount), "held"
				return st
			}
		}
	}
	switch {
	case k.Ledger < s.MarkDelete.Ledger || k.Ledger == s.MarkDelete.Ledger && k.Entry <= s.MarkDelete.Entry:
		st.Where, st.Class = "acknowledged (at or before the mark-delete position)", "acked"
	case slices.ContainsFunc(s.Acked, at):
		st.Where, st.Class = "acknowledged (individually, after the mark-delete position)", "acked"
	case slices.ContainsFunc(s.Replay, at):
		st.Where, st.Class = "in the replay queue, to be delivered again", "waiting"
	case k.Ledger > s.ReadPosition.Ledger || k.Ledger == s.ReadPosition.Ledger && k.Entry >= s.ReadPosition.Entry:
		st.Where, st.Class = "in the backlog, not read yet", "waiting"
	default:
		st.Where, st.Class = "in the backlog", "waiting"
	}
	return st
}

// Report is what a report shows: the state of the topics and the lives of
// some messages.
type Report struct {
	Title string
	// Note says why the report was written; Failed marks it as the report
	// of a failure.
	Note      string
	Failed    bool
	BrokerURL string
	// Node is, in a cluster of several brokers, the broker the report is
	// of; nil for a lone broker and for a report of the whole cluster.
	Node *Node
	// Cluster names, in a report of a whole cluster, its brokers' service
	// URLs by index.
	Cluster   []string
	Generated time.Time
	History   Stats
	Topics    []TopicState
	Lives     []*Life
	// Others counts the messages the history holds beyond those in Lives.
	Others int
}

// NewReport gathers a report of broker b from events: the state of its
// topics, and the lives of the busiest messages, at most max of them (all
// when max <= 0).
func NewReport(b *broker.Broker, events []broker.Event, max int) Report {
	all := Lives(events, b, nil)
	busiest := Busiest(all, max)
	return Report{BrokerURL: b.URL(), Node: nodeOf(b), Generated: time.Now(), Topics: topicStates(b, nil, copiesPerTopic(events, b)),
		Lives: busiest, Others: len(all) - len(busiest)}
}

// NewClusterReport gathers a report of the brokers of a cluster, by index,
// from events (a history that follows them all): the state of the topics
// each one serves, each naming its broker, and the lives of the busiest
// messages, at most max of them (all when max <= 0), across the brokers
// their topics moved between. A broker that is not serving (stopped,
// crashed) shows no topic.
func NewClusterReport(brokers []*broker.Broker, events []broker.Event, max int) Report {
	store := clusterStore(brokers)
	all := Lives(events, store, nil)
	busiest := Busiest(all, max)
	rep := Report{Generated: time.Now(), Lives: busiest, Others: len(all) - len(busiest)}
	copies := copiesPerTopic(events, store)
	for _, b := range brokers {
		rep.Cluster = append(rep.Cluster, b.URL())
		for _, name := range b.LoadedTopics() {
			rep.Topics = append(rep.Topics, topicStates(b, []string{name}, copies)...)
		}
	}
	slices.SortFunc(rep.Topics, func(a, b TopicState) int { return cmp.Compare(a.Name, b.Name) })
	return rep
}

// ClusterStore returns the store of the brokers of a cluster, by index, for
// Lives: it reads an entry from the broker serving its topic, and tells the
// cluster's brokers, so that the lives name the broker of each mark, and
// its name and the configuration store's clusters, so that the lives of
// several clusters' events name their cluster and join their copies.
func ClusterStore(brokers []*broker.Broker) Store { return clusterStore(brokers) }

// clusterStore reads an entry from whichever broker of a cluster serves its
// topic.
type clusterStore []*broker.Broker

func (c clusterStore) Entry(topic string, id broker.MessageID) (broker.Entry, error) {
	err := fmt.Errorf("no broker serves %s", topic)
	for _, b := range c {
		if slices.Contains(b.LoadedTopics(), topic) {
			var e broker.Entry
			if e, err = b.Entry(topic, id); err == nil {
				return e, nil
			}
		}
	}
	return broker.Entry{}, err
}

// ClusterName names the brokers' cluster, as a broker does.
func (c clusterStore) ClusterName() string {
	if len(c) == 0 {
		return ""
	}
	return c[0].ClusterName()
}

// Clusters lists the clusters of the brokers' configuration store, as a
// broker does.
func (c clusterStore) Clusters() []string {
	if len(c) == 0 {
		return nil
	}
	return c[0].Clusters()
}

// Brokers tells the cluster's brokers, as a broker does.
func (c clusterStore) Brokers() []broker.BrokerInfo {
	if len(c) == 0 {
		return nil
	}
	return c[0].Brokers()
}

// reportSize is the number of messages in a report downloaded from the view.
const reportSize = 20

func (v *Handler) report(w http.ResponseWriter, r *http.Request) {
	rep := NewReport(v.b, v.events(), reportSize)
	rep.Title = "pulsarsim report"
	rep.Note = fmt.Sprintf("The %d busiest messages of the broker at %s.", len(rep.Lives), v.b.URL())
	if rep.Node != nil {
		rep.Note = fmt.Sprintf("The %d busiest messages in the history, as %s of the cluster (%s) sees them.", len(rep.Lives), rep.Node, v.b.URL())
	}
	rep.History = v.h.Stats()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := WriteReport(w, rep); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}
