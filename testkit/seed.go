package testkit

import (
	"net"
	"net/http"
	"time"

	"github.com/pulsarsim/pulsarsim/admin"
	"github.com/pulsarsim/pulsarsim/admin/view"
)

// Seeding: put messages, subscriptions, schemas and policies in place
// without a client, and read what the broker holds, through the broker's
// exported API. Each call fails the test on error, as Messages does.

// Publish stores msgs on topic as a producer's sends would be stored, one
// entry each, and returns their ids. Real consumers and readers receive
// them, events report them, stats count them.
func (b *Broker) Publish(topic string, msgs ...ProducerMessage) []MessageID {
	b.tb.Helper()
	ids, err := b.srv.Publish(topic, msgs...)
	if err != nil {
		b.tb.Fatalf("pulsarsim: publish to %s: %v", topic, err)
	}
	return ids
}

// PublishBatch stores msgs on topic as one batch entry, as a batching
// producer would, and returns their ids (one per batch index).
func (b *Broker) PublishBatch(topic string, msgs ...ProducerMessage) []MessageID {
	b.tb.Helper()
	ids, err := b.srv.PublishBatch(topic, msgs...)
	if err != nil {
		b.tb.Fatalf("pulsarsim: publish a batch to %s: %v", topic, err)
	}
	return ids
}

// CreateSubscription creates the durable subscription sub on topic at a
// position: Earliest, Latest or AtMessage(id).
func (b *Broker) CreateSubscription(topic, sub string, at Position) {
	b.tb.Helper()
	if err := b.srv.CreateSubscription(topic, sub, at); err != nil {
		b.tb.Fatalf("pulsarsim: create subscription %s on %s: %v", sub, topic, err)
	}
}

// DeleteSubscription deletes a subscription of topic; force closes its
// consumers first (without force, consumers attached fail the test).
func (b *Broker) DeleteSubscription(topic, sub string, force bool) {
	b.tb.Helper()
	if err := b.srv.DeleteSubscription(topic, sub, force); err != nil {
		b.tb.Fatalf("pulsarsim: delete subscription %s of %s: %v", sub, topic, err)
	}
}

// Entry returns the stored entry of topic with this id: its messages
// (batches expanded) and its uncompressed body.
func (b *Broker) Entry(topic string, id MessageID) Entry {
	b.tb.Helper()
	e, err := b.srv.Entry(topic, id)
	if err != nil {
		b.tb.Fatalf("pulsarsim: entry %d:%d of %s: %v", id.Ledger, id.Entry, topic, err)
	}
	return e
}

// Stats returns the statistics of a topic (or one partition), as Pulsar's
// topic stats report them.
func (b *Broker) Stats(topic string) TopicStats {
	b.tb.Helper()
	st, err := b.srv.TopicStats(topic)
	if err != nil {
		b.tb.Fatalf("pulsarsim: stats of %s: %v", topic, err)
	}
	return st
}

// PutSchema registers a schema on topic and returns its version.
func (b *Broker) PutSchema(topic string, s Schema) int64 {
	b.tb.Helper()
	v, err := b.srv.PutSchema(topic, s)
	if err != nil {
		b.tb.Fatalf("pulsarsim: put schema on %s: %v", topic, err)
	}
	return v
}

// Schema returns version v of topic's schema, its newest for a negative v.
func (b *Broker) Schema(topic string, v int64) Schema {
	b.tb.Helper()
	s, err := b.srv.Schema(topic, v)
	if err != nil {
		b.tb.Fatalf("pulsarsim: schema %d of %s: %v", v, topic, err)
	}
	return s
}

// SetNamespacePolicies sets, on the namespace "tenant/ns", the policies
// that set sets; the namespace's other policies stay as they are.
func (b *Broker) SetNamespacePolicies(ns string, set Policies) {
	b.tb.Helper()
	b.UpdateNamespacePolicies(ns, func(p *Policies) { *p = set.Or(*p) })
}

// SetTopicPolicies sets, on an existing topic, the policies that set sets;
// the topic's other policies stay as they are.
func (b *Broker) SetTopicPolicies(topic string, set Policies) {
	b.tb.Helper()
	b.UpdateTopicPolicies(topic, func(p *Policies) { *p = set.Or(*p) })
}

// UpdateNamespacePolicies edits the namespace's own policies: change gets a
// copy to change (a field set to nil is unset).
func (b *Broker) UpdateNamespacePolicies(ns string, change func(*Policies)) {
	b.tb.Helper()
	if err := b.srv.UpdateNamespacePolicies(ns, change); err != nil {
		b.tb.Fatalf("pulsarsim: policies of namespace %s: %v", ns, err)
	}
}

// UpdateTopicPolicies edits an existing topic's own policies, as
// UpdateNamespacePolicies does a namespace's.
func (b *Broker) UpdateTopicPolicies(topic string, change func(*Policies)) {
	b.tb.Helper()
	if err := b.srv.UpdateTopicPolicies(topic, change); err != nil {
		b.tb.Fatalf("pulsarsim: policies of topic %s: %v", topic, err)
	}
}

// AppliedPolicies returns the policies in force for a topic: each from the
// topic, else its namespace, else the broker's default.
func (b *Broker) AppliedPolicies(topic string) Policies {
	b.tb.Helper()
	p, err := b.srv.AppliedPolicies(topic)
	if err != nil {
		b.tb.Fatalf("pulsarsim: policies of topic %s: %v", topic, err)
	}
	return p
}

// AdminURL returns the URL of this broker's admin REST API,
// "http://127.0.0.1:PORT", for pulsaradmin or net/http, which also serves
// the web view (ViewURL) and the WebSocket API (WebSocketURL). The API is served from the first call on, and
// closed when the test ends.
func (b *Broker) AdminURL() string {
	b.tb.Helper()
	b.adminMu.Lock()
	defer b.adminMu.Unlock()
	if b.adminURL != "" {
		return b.adminURL
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.tb.Fatalf("pulsarsim: admin API: %v", err)
	}
	b.adminStop = b.serveAdmin(ln)
	b.tb.Cleanup(func() {
		b.adminMu.Lock()
		defer b.adminMu.Unlock()
		b.adminStop()
	})
	return b.adminURL
}

// serveAdmin serves the admin API and the web view on ln, tells the broker
// its web service URL, and returns what stops serving them. Called with
// adminMu held.
func (b *Broker) serveAdmin(ln net.Listener) (stop func()) {
	b.adminURL = "http://" + ln.Addr().String()
	b.srv.SetWebServiceURL(b.adminURL)
	web := view.New(b.srv, b.shownHistory())
	var opts []admin.Option
	for pattern, h := range web.Routes() {
		opts = append(opts, admin.WithHandler(pattern, h))
	}
	ws := b.webSocketServer()
	for pattern, h := range ws.Routes() {
		opts = append(opts, admin.WithHandler(pattern, h))
	}
	opts = append(opts, admin.WithWebServiceURLs(b.adminURL, ""))
	srv := &http.Server{Handler: admin.New(b.srv, opts...), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return func() {
		web.Close() // ends the live-update streams, which Close does not
		ws.Close()  // ends the WebSocket sessions, which Close does not either
		srv.Close()
	}
}

// Compact compacts a topic (every partition of a partitioned topic) as
// Pulsar's admin trigger does; read-compacted consumers and readers, and
// TableViews, then read the latest message of each key up to now.
func (b *Broker) Compact(topic string) {
	b.tb.Helper()
	if err := b.srv.Compact(topic); err != nil {
		b.tb.Fatalf("pulsarsim: compact %s: %v", topic, err)
	}
}

// CompactionStatus returns the status of a topic's last compaction, as
// GET .../compaction answers it.
func (b *Broker) CompactionStatus(topic string) CompactionStatus {
	b.tb.Helper()
	st, err := b.srv.CompactionStatus(topic)
	if err != nil {
		b.tb.Fatalf("pulsarsim: compaction status of %s: %v", topic, err)
	}
	return st
}
