// Package bundles keeps which broker of a cluster owns which namespace
// bundle, as Pulsar's metadata store keeps it, and decides who gets a
// bundle nobody owns, as Pulsar's load managers do. It is a pure table: no
// goroutines, no locks (its owner, the broker package's store, serialises
// access under its own lock) and no clock (time is an argument).
//
// A namespace is split into bundles, ranges of the 32-bit hash of topic
// names; a topic belongs to the bundle holding the CRC-32 of its full name
// (each partition of a partitioned topic has its own), as Pulsar's
// NamespaceBundleFactory places it. Brokers are numbered from 0; a broker
// that crashed keeps its bundles until the ownership timeout has passed.
package bundles

import (
	"fmt"
	"hash/crc32"
	"strings"
	"time"
)

// DefaultCount is the number of bundles of a namespace created without a
// count, Pulsar's defaultNumberOfNamespaceBundles.
const DefaultCount = 4

// DefaultOwnershipTimeout is how long the bundles of a broker that crashed
// stay its own: Pulsar's metadataStoreSessionTimeoutMillis, after which the
// crashed broker's ephemeral ownership nodes are gone.
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

// Hash is the hash that places a topic in a bundle: the CRC-32 (IEEE) of
// its full name.
func Hash(full string) uint32 { return crc32.ChecksumIEEE([]byte(full)) }

// Boundaries returns the n+1 boundaries of n bundles of equal size over the
// hash range, Pulsar's default split.
func Boundaries(n int) []uint32 {
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

// Node is one broker of the cluster as the table knows it: where it serves,
// and whether it is alive (a broker that crashed is gone since GoneAt).
type Node struct {
	URL, TLSURL, WebURL string
	Alive               bool
	GoneAt              time.Time
}

// ID is the broker's id as Pulsar names it: host:port of its web service,
// of its binary service when no web service is known.
func (n Node) ID() string {
	u := n.WebURL
	if u == "" {
		u = n.URL
	}
	if _, hostport, ok := strings.Cut(u, "://"); ok {
		return hostport
	}
	return u
}

// Table is the bundles of each namespace and their owners. The zero value
// is not usable; call NewTable.
type Table struct {
	bounds  map[string][]uint32 // a namespace's bundle boundaries
	owner   map[Bundle]int      // the owning node of each owned bundle
	prefer  map[Bundle]int      // the broker an unload named as the next owner
	nodes   []Node
	timeout time.Duration // how long a crashed broker keeps its bundles
}

// NewTable returns a table with no brokers, every namespace split into
// DefaultCount bundles, and DefaultOwnershipTimeout.
func NewTable() *Table {
	return &Table{bounds: map[string][]uint32{}, owner: map[Bundle]int{}, prefer: map[Bundle]int{},
		timeout: DefaultOwnershipTimeout}
}

// SetTimeout sets how long a crashed broker keeps its bundles.
func (t *Table) SetTimeout(d time.Duration) { t.timeout = d }

// Split gives namespace ns n bundles of equal size.
func (t *Table) Split(ns string, n int) { t.bounds[ns] = Boundaries(n) }

// Of returns the bundle of namespace ns holding the topic with this full
// name (a namespace never split gets DefaultCount bundles).
func (t *Table) Of(ns, full string) Bundle {
	bs := t.boundsOf(ns)
	h := Hash(full)
	for i := 0; i+1 < len(bs); i++ {
		if h < bs[i+1] || i+2 == len(bs) {
			return Bundle{Namespace: ns, Lower: bs[i], Upper: bs[i+1]}
		}
	}
	return Bundle{Namespace: ns, Lower: bs[0], Upper: bs[len(bs)-1]}
}

// Bundles returns the bundles of namespace ns, in hash order.
func (t *Table) Bundles(ns string) []Bundle {
	bs := t.boundsOf(ns)
	out := make([]Bundle, 0, len(bs)-1)
	for i := 0; i+1 < len(bs); i++ {
		out = append(out, Bundle{Namespace: ns, Lower: bs[i], Upper: bs[i+1]})
	}
	return out
}

func (t *Table) boundsOf(ns string) []uint32 {
	bs := t.bounds[ns]
	if bs == nil {
		bs = Boundaries(DefaultCount)
		t.bounds[ns] = bs
	}
	return bs
}

// AddNode adds a broker, not serving yet, and returns its index.
func (t *Table) AddNode() int {
	t.nodes = append(t.nodes, Node{})
	return len(t.nodes) - 1
}

// Nodes returns the brokers, by index.
func (t *Table) Nodes() []Node { return append([]Node(nil), t.nodes...) }

// Node returns broker n; ok is false for an index the table does not have.
func (t *Table) Node(n int) (Node, bool) {
	if n < 0 || n >= len(t.nodes) {
		return Node{}, false
	}
	return t.nodes[n], true
}

// Update changes broker n with fn (for its URLs as it starts serving, or
// its state as it stops); an index the table does not have changes nothing.
func (t *Table) Update(n int, fn func(*Node)) {
	if n >= 0 && n < len(t.nodes) {
		fn(&t.nodes[n])
	}
}

// Clustered reports whether the table has more than one broker: a lone
// broker owns everything and never redirects.
func (t *Table) Clustered() bool { return len(t.nodes) > 1 }

// Current returns the broker owning bd: a live one, or one that crashed
// less than the ownership timeout before now. An expired ownership is
// dropped.
func (t *Table) Current(bd Bundle, now time.Time) (int, bool) {
	n, ok := t.owner[bd]
	if !ok {
		return -1, false
	}
	if t.nodes[n].Alive || now.Sub(t.nodes[n].GoneAt) < t.timeout {
		return n, true
	}
	delete(t.owner, bd)
	return -1, false
}

// Owns reports whether live broker n owns bd now.
func (t *Table) Owns(n int, bd Bundle) bool {
	o, ok := t.owner[bd]
	return ok && o == n && t.nodes[n].Alive
}

// Leader returns the leader broker, the live one of lowest index (the
// first started, as Pulsar's leader election picks the first), or -1.
func (t *Table) Leader() int {
	for i, nd := range t.nodes {
		if nd.Alive {
			return i
		}
	}
	return -1
}

// Choose picks the broker a bundle nobody owns goes to: the one an unload
// named, if it is alive, else the live broker owning the fewest bundles,
// the lowest index on a tie; -1 when none is alive.
func (t *Table) Choose(bd Bundle) int {
	if n, ok := t.prefer[bd]; ok && n < len(t.nodes) && t.nodes[n].Alive {
		return n
	}
	counts := make([]int, len(t.nodes))
	for _, n := range t.owner {
		counts[n]++
	}
	best := -1
	for i, nd := range t.nodes {
		if nd.Alive && (best < 0 || counts[i] < counts[best]) {
			best = i
		}
	}
	return best
}

// Assign makes broker n the owner of bd, using up the broker an unload
// named for it.
func (t *Table) Assign(bd Bundle, n int) {
	t.owner[bd] = n
	delete(t.prefer, bd)
}

// Free leaves bd without an owner.
func (t *Table) Free(bd Bundle) { delete(t.owner, bd) }

// Prefer names broker n as the next owner of bd, when it is next assigned
// (the modular load manager's bundle affinity).
func (t *Table) Prefer(bd Bundle, n int) { t.prefer[bd] = n }

// OwnedBy returns the bundles broker n owns.
func (t *Table) OwnedBy(n int) []Bundle {
	var out []Bundle
	for bd, owner := range t.owner {
		if owner == n {
			out = append(out, bd)
		}
	}
	return out
}
