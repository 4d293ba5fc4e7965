package broker

import (
	"fmt"
	"hash/crc32"
	"time"
)

// DefaultBundles is the number of bundles a namespace is split into when it
// is created, Pulsar's defaultNumberOfNamespaceBundles.
const DefaultBundles = 4

// DefaultOwnershipTimeout is how long the bundles of a broker that crashed
// stay owned by it before the other brokers may take them over: Pulsar's
// metadataStoreSessionTimeoutMillis, after which the crashed broker's
// ephemeral ownership nodes are gone.
const DefaultOwnershipTimeout = 30 * time.Second

// Bundle is one namespace bundle: the topics of Namespace whose name hashes
// into [Lower, Upper) (the last bundle of a namespace also holds Upper).
type Bundle struct {
	Namespace    string
	Lower, Upper uint32
}

// Range is the bundle's name as Pulsar writes it, "0x00000000_0x40000000".
func (bd Bundle) Range() string { return fmt.Sprintf("0x%08x_0x%08x", bd.Lower, bd.Upper) }

// String is "tenant/ns/0x00000000_0x40000000".
func (bd Bundle) String() string { return bd.Namespace + "/" + bd.Range() }

// topicHash is the hash that places a topic in a bundle: the CRC-32 of its
// full name (each partition of a partitioned topic has its own), as Pulsar's
// NamespaceBundleFactory computes it.
func topicHash(full string) uint32 { return crc32.ChecksumIEEE([]byte(full)) }

// boundaries returns the n+1 boundaries of n bundles of equal size over the
// hash range, Pulsar's default split.
func boundaries(n int) []uint32 {
	if n < 1 {
		n = 1
	}
	out := make([]uint32, n+1)
	step := uint64(1<<32) / uint64(n)
	for i := 1; i < n; i++ {
		out[i] = uint32(uint64(i) * step)
	}
	out[n] = 0xffffffff
	return out
}

// node is one broker of the cluster as the store knows it: where it serves,
// and whether it is alive (a broker that crashed is gone since goneAt, by
// the broker clock).
type node struct {
	url, tlsURL, httpURL string
	alive                bool
	goneAt               time.Time
}

// ownership is which broker owns which bundle, and the brokers' addresses,
// as Pulsar's metadata store keeps them. It lives in the store, under its
// lock.
type ownership struct {
	bounds map[string][]uint32 // a namespace's bundle boundaries
	owner  map[Bundle]int      // the owning node of each owned bundle
	prefer map[Bundle]int      // the broker an unload named as the next owner
	nodes  []node
	// timeout is how long a crashed broker keeps its bundles.
	timeout time.Duration
}

func newOwnership() ownership {
	return ownership{
		bounds:  map[string][]uint32{},
		owner:   map[Bundle]int{},
		prefer:  map[Bundle]int{},
		timeout: DefaultOwnershipTimeout,
	}
}

// bundleOfLocked returns the bundle holding the topic with this full name.
func (o *ownership) bundleOfLocked(ns, full string) Bundle {
	bs := o.bounds[ns]
	if bs == nil {
		bs = boundaries(DefaultBundles)
		o.bounds[ns] = bs
	}
	h := topicHash(full)
	for i := 0; i+1 < len(bs); i++ {
		if h < bs[i+1] || i+2 == len(bs) {
			return Bundle{Namespace: ns, Lower: bs[i], Upper: bs[i+1]}
		}
	}
	return Bundle{Namespace: ns, Lower: bs[0], Upper: bs[len(bs)-1]}
}

// clustered reports whether the store serves more than one broker; a lone
// broker owns everything and never redirects.
func (o *ownership) clustered() bool { return len(o.nodes) > 1 }

// currentOwnerLocked returns the node owning bd: a live broker, or one that
// crashed less than the ownership timeout ago (its ownership has not expired
// yet). An expired ownership is dropped.
func (o *ownership) currentOwnerLocked(bd Bundle, now time.Time) (int, bool) {
	n, ok := o.owner[bd]
	if !ok {
		return -1, false
	}
	if o.nodes[n].alive || now.Sub(o.nodes[n].goneAt) < o.timeout {
		return n, true
	}
	delete(o.owner, bd)
	return -1, false
}

// leaderLocked returns the leader broker, the live one of lowest index (the
// first started, as Pulsar's leader election picks the first), or -1.
func (o *ownership) leaderLocked() int {
	for i, nd := range o.nodes {
		if nd.alive {
			return i
		}
	}
	return -1
}

// chooseLocked picks the broker a bundle nobody owns goes to: the one an
// unload named, if it is alive, else the live broker owning the fewest
// bundles, the lowest index on a tie; -1 when none is alive.
func (o *ownership) chooseLocked(bd Bundle) int {
	if n, ok := o.prefer[bd]; ok && n < len(o.nodes) && o.nodes[n].alive {
		return n
	}
	counts := make([]int, len(o.nodes))
	for _, n := range o.owner {
		counts[n]++
	}
	best := -1
	for i, nd := range o.nodes {
		if nd.alive && (best < 0 || counts[i] < counts[best]) {
			best = i
		}
	}
	return best
}

// ownedByLocked returns the bundles node n owns.
func (o *ownership) ownedByLocked(n int) []Bundle {
	var out []Bundle
	for bd, owner := range o.owner {
		if owner == n {
			out = append(out, bd)
		}
	}
	return out
}
