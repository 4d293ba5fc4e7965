package broker

import (
	"errors"
	"fmt"
	"strings"
)

// errNotServed refuses a topic whose bundle another broker of the cluster
// owns: the client must look the topic up again (ServiceNotReady, as Pulsar
// answers a PRODUCER or SUBSCRIBE for a bundle the broker does not own).
var errNotServed = errors.New("namespace bundle not served by this broker")

// servesLocked reports whether this broker may load tn: a lone broker
// serves everything; a broker of a cluster serves the bundles it owns now.
// Only a lookup gives a bundle nobody owns an owner (lookupOwner), so
// neither a PRODUCER nor an inspection moves a bundle. Called under the
// store's lock.
func (b *Broker) servesLocked(tn TopicName) bool {
	if b.stopping || b.closed {
		return false
	}
	if !b.data.Owners.Clustered() {
		return true
	}
	return b.data.Owners.Owns(b.node, b.data.Owners.Of(tn.NamespaceName(), tn.String()))
}

// LoadManager names the way a cluster assigns bundles and moves them, as
// Pulsar's loadManagerClassName selects it.
type LoadManager int

const (
	// ModularLoadManager is Pulsar's default (ModularLoadManagerImpl): the
	// leader broker assigns a bundle nobody owns, lookups on the others
	// redirect to it, and an unload closes producers and consumers, which
	// look their topics up again.
	ModularLoadManager LoadManager = iota
	// ExtensibleLoadManager is PIP-192's ExtensibleLoadManagerImpl: any
	// broker assigns, a lookup always answers Connect with the owner, and a
	// transfer's CLOSE_PRODUCER and CLOSE_CONSUMER name the new owner, which
	// clients connect to without a lookup (PIP-307).
	ExtensibleLoadManager
)

// WithLoadManager selects the cluster's load manager (ModularLoadManager by
// default).
func WithLoadManager(lm LoadManager) Option { return func(c *config) { c.loadManager = lm } }

// lookupAnswer is what a LOOKUP answers: Connect or Redirect to url and
// tlsURL (self: to this broker, whose listener URLs the lookup may choose),
// with the authoritative flag; or failed with a code and message.
type lookupAnswer struct {
	connect, self, authoritative bool
	node                         int // the broker of url, in a cluster
	url, tlsURL                  string
	failed                       bool
	msg                          string
}

// lookupOwner answers a lookup of tn made with the authoritative flag the
// client sent, as Pulsar 4.0's NamespaceService does. A lone broker owns
// everything. In a cluster, an owned bundle is answered Connect with its
// owner, from any broker (also a crashed owner, until its ownership times
// out). A bundle nobody owns is assigned: with the extensible load manager
// by any broker, which answers Connect; with the modular one by the leader
// (the live broker of lowest index) only, so another broker redirects to
// it (not authoritative), the leader redirects to the broker it chose
// (authoritative) unless it chose itself, and a broker asked
// authoritatively takes the bundle.
func (b *Broker) lookupOwner(tn TopicName, authoritative bool) lookupAnswer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lookupBundleLocked(b.data.Owners.Of(tn.NamespaceName(), tn.String()), authoritative, tn.String())
}

// lookupBundleLocked is lookupOwner for bundle bd, named what in a failure.
func (b *Broker) lookupBundleLocked(bd Bundle, authoritative bool, what string) lookupAnswer {
	o := b.data.Owners
	if !o.Clustered() {
		return lookupAnswer{connect: true, self: true, authoritative: true, node: b.node}
	}
	now := b.cfg.clock.Now()
	answer := func(n int, connect, auth bool) lookupAnswer {
		nd, _ := o.Node(n)
		return lookupAnswer{connect: connect, self: n == b.node && connect, authoritative: auth, node: n, url: nd.URL, tlsURL: nd.TLSURL}
	}
	if n, ok := o.Current(bd, now); ok {
		return answer(n, true, true)
	}
	if b.cfg.loadManager == ModularLoadManager && !authoritative {
		if leader := o.Leader(); leader >= 0 && leader != b.node {
			return answer(leader, false, false)
		}
	}
	pick := b.node
	if b.cfg.loadManager == ExtensibleLoadManager || !authoritative {
		pick = o.Choose(bd)
	}
	if nd, ok := o.Node(pick); !ok || !nd.Alive {
		return lookupAnswer{failed: true, msg: "No broker was available to own " + what}
	}
	if pick != b.node && b.cfg.loadManager == ModularLoadManager {
		return answer(pick, false, true)
	}
	o.Assign(bd, pick)
	return answer(pick, true, true)
}

// optionalURL is u for an optional protocol field: nil when empty.
func optionalURL(u string) *string {
	if u == "" {
		return nil
	}
	return &u
}

// notServedMessage is Pulsar's reason for refusing a topic this broker does
// not serve, naming the topic's bundle (the whole range when its namespace
// does not exist, as then it has no bundles).
func (b *Broker) notServedMessage(tn TopicName) string {
	b.mu.Lock()
	// The broker's id: its web service's host:port, as Pulsar names it,
	// else its binary service's.
	addr := strings.TrimPrefix(b.url, "pulsar://")
	if _, hostport, ok := strings.Cut(b.webURL, "://"); ok {
		addr = hostport
	}
	bundle := tn.NamespaceName() + "/0x00000000_0xffffffff"
	if b.data.Owners.Clustered() && b.namespaceReadyLocked(tn.NamespaceName()) {
		bundle = b.data.Owners.Of(tn.NamespaceName(), tn.String()).String()
	}
	b.mu.Unlock()
	return fmt.Sprintf("Namespace bundle (%s) for topic (%s) not served by this instance:%s. "+
		"Please redo the lookup.", bundle, tn, addr)
}
