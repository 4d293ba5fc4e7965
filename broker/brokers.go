package broker

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/bundles"
)

// What a broker tells of its cluster through its exported API, for the admin
// API: the brokers and their leader, where a topic is served, the bundles
// of a namespace, and bundle unloads. A lone broker is a cluster of one.

// BrokerInfo is one broker of the cluster as the store knows it.
type BrokerInfo struct {
	// ID is Pulsar's broker id, host:port of the web service (of the
	// binary service when no web service URL is known).
	ID                  string
	URL, URLTLS, WebURL string
	Alive               bool
	// Self is set for the broker answering.
	Self bool
}

// Brokers returns the brokers of this broker's cluster, by index: just
// this one for a lone broker.
func (b *Broker) Brokers() []BrokerInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	nodes := b.data.Owners.Nodes()
	if len(nodes) == 0 {
		return []BrokerInfo{infoOf(b.selfNodeLocked(!b.closed), true)}
	}
	out := make([]BrokerInfo, len(nodes))
	for i, nd := range nodes {
		out[i] = infoOf(nd, i == b.node)
	}
	return out
}

// selfNodeLocked is a lone broker as a cluster's table would know it.
func (b *Broker) selfNodeLocked(alive bool) bundles.Node {
	return bundles.Node{URL: b.advertise(b.url), TLSURL: b.advertise(b.tlsURL), WebURL: b.webURL, Alive: alive}
}

func infoOf(nd bundles.Node, self bool) BrokerInfo {
	return BrokerInfo{ID: nd.ID(), URL: nd.URL, URLTLS: nd.TLSURL, WebURL: nd.WebURL, Alive: nd.Alive, Self: self}
}

// Leader returns the cluster's leader broker, the live broker of lowest
// index (Pulsar's first started); for a lone broker, itself.
func (b *Broker) Leader() BrokerInfo {
	bs := b.Brokers()
	b.mu.Lock()
	leader := b.data.Owners.Leader()
	b.mu.Unlock()
	if leader < 0 || leader >= len(bs) {
		return bs[0]
	}
	return bs[leader]
}

// LookupResult is where a topic is served, as a lookup answers it: Connect
// to the broker of the URLs (Redirect: ask that broker again, with
// Authoritative), Self when that is the broker answering.
type LookupResult struct {
	Redirect, Authoritative, Self bool
	Broker                        BrokerInfo
}

// Lookup answers where topic is served, as a LOOKUP made with authoritative
// would be answered (and assigning its bundle when nobody owns it, as a
// lookup does). It fails with ErrServiceNotReady-like wording when no
// broker is alive.
func (b *Broker) Lookup(topic string, authoritative bool) (LookupResult, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return LookupResult{}, err
	}
	a := b.lookupOwner(tn, authoritative)
	if a.failed {
		return LookupResult{}, errors.New(a.msg)
	}
	return b.lookupResult(a), nil
}

// lookupResult is a lookup's answer as the exported API tells it.
func (b *Broker) lookupResult(a lookupAnswer) LookupResult {
	res := LookupResult{Redirect: !a.connect, Authoritative: a.authoritative, Self: a.self}
	b.mu.Lock()
	defer b.mu.Unlock()
	nodes := b.data.Owners.Nodes()
	if a.self || len(nodes) == 0 {
		res.Broker = infoOf(b.selfNodeLocked(true), true)
		return res
	}
	res.Broker = infoOf(nodes[a.node], a.node == b.node)
	return res
}

// BundleOf returns the bundle holding topic (name a partition for a
// partitioned topic: each has its own).
func (b *Broker) BundleOf(topic string) (Bundle, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return Bundle{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.data.Owners.Of(tn.NamespaceName(), tn.String()), nil
}

// Bundles returns the bundles of namespace ns, in hash order.
func (b *Broker) Bundles(ns string) []Bundle {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.data.Owners.Bundles(ns)
}

// ParseBundle reads a bundle range of namespace ns as Pulsar writes it,
// "0x00000000_0x40000000".
func ParseBundle(ns, rng string) (Bundle, error) {
	lo, hi, ok := strings.Cut(rng, "_")
	l, err1 := strconv.ParseUint(strings.TrimPrefix(lo, "0x"), 16, 32)
	h, err2 := strconv.ParseUint(strings.TrimPrefix(hi, "0x"), 16, 32)
	if !ok || err1 != nil || err2 != nil || !strings.HasPrefix(lo, "0x") || !strings.HasPrefix(hi, "0x") || l >= h {
		return Bundle{}, errorf(ErrInvalidName, "Invalid bundle range %s", rng)
	}
	return Bundle{Namespace: ns, Lower: uint32(l), Upper: uint32(h)}, nil
}

// BundleOwner returns the broker owning bd now, ok false when nobody does
// (or the namespace has no such bundle).
func (b *Broker) BundleOwner(bd Bundle) (BrokerInfo, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, ok := b.data.Owners.Current(bd, b.cfg.clock.Now())
	if !ok {
		return BrokerInfo{}, false
	}
	nd, _ := b.data.Owners.Node(n)
	return infoOf(nd, n == b.node), true
}

// OwnedBundles returns the bundles this broker owns.
func (b *Broker) OwnedBundles() []Bundle {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.data.Owners.Clustered() {
		return nil
	}
	return b.data.Owners.OwnedBy(b.node)
}

// ErrNotOwner is returned by UnloadBundle on a broker that does not own the
// bundle: the request belongs to the owner (the admin API redirects there).
var ErrNotOwner = errors.New("the bundle is owned by another broker")

// UnloadBundle unloads bundle bd of this broker's cluster, as `pulsar-admin
// namespaces unload --bundle` does (Cluster.Unload, Cluster.Move);
// destination, a broker id (host:port of its web service) or "", names the
// broker to move it to. It fails with ErrNotOwner when another broker owns
// the bundle (BundleOwner tells which), with ErrNotAllowed for a
// destination that is not an active broker or, with the extensible load
// manager, for a bundle nobody owns or a transfer to its own owner. A
// bundle nobody owns is otherwise left as it is.
func (b *Broker) UnloadBundle(bd Bundle, destination string) error {
	to := -1
	if destination != "" {
		destination = strings.TrimPrefix(strings.TrimPrefix(destination, "http://"), "https://")
		for i, info := range b.Brokers() {
			if info.ID == destination {
				to = i
			}
		}
		if to < 0 {
			return errorf(ErrNotAllowed, "Not allowed unload namespace bundle to inactive destination broker")
		}
	}
	return b.unloadBundle(bd, to)
}

// unloadBundle unloads bd to broker to (-1: none named), when this broker
// owns it or nobody does.
func (b *Broker) unloadBundle(bd Bundle, to int) error {
	o := b.data.Owners
	b.mu.Lock()
	if !o.Clustered() {
		b.mu.Unlock()
		b.releaseBundle(bd, nil) // a lone broker owns everything
		return nil
	}
	owner, owned := o.Current(bd, b.cfg.clock.Now())
	dstNode, dstKnown := o.Node(to)
	var dst *bundles.Node
	switch {
	case owned && owner != b.node:
		b.mu.Unlock()
		return ErrNotOwner
	case to >= 0 && (!dstKnown || !dstNode.Alive):
		b.mu.Unlock()
		return errorf(ErrNotAllowed, "Not allowed unload namespace bundle to inactive destination broker")
	case to >= 0 && b.cfg.loadManager == ExtensibleLoadManager:
		if !owned {
			b.mu.Unlock()
			return errorf(ErrNotAllowed, "Namespace bundle: %s is not owned by any broker.", bd)
		}
		if owner == to {
			b.mu.Unlock()
			return errorf(ErrNotAllowed, "Namespace bundle: %s own by %s, cannot be transfer to same broker.", bd, dstNode.ID())
		}
		o.Assign(bd, to)
		dst = &dstNode
	default:
		o.Free(bd)
		if to >= 0 {
			o.Prefer(bd, to)
		}
	}
	b.mu.Unlock()
	if owned {
		b.releaseBundle(bd, dst)
	}
	return nil
}

// String is the broker's id and URL, for logs.
func (i BrokerInfo) String() string { return fmt.Sprintf("%s (%s)", i.ID, i.URL) }
