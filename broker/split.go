package broker

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/bundles"
)

// Bundle split, as Pulsar 4.0.8's `PUT /admin/v2/namespaces/{t}/{ns}/{bundle}/split`
// does it (NamespacesBase.internalSplitNamespaceBundleAsync,
// NamespaceService.splitAndOwnBundle): the owner of a bundle replaces it by
// two or more that cover its range, chosen by a split algorithm, and owns
// them all; its loaded topics stay where they are, unless the split unloads
// the new bundles (with the modular load manager; the extensible one ignores
// unload). The namespace's bundles, and its policies' `bundles`, change with
// it. A lone broker splits its bundles just as well.

// SplitOptions says how SplitBundle splits a bundle: Pulsar's query
// parameters splitAlgorithmName and unload, and the body's splitBoundaries.
type SplitOptions struct {
	// Algorithm is one of SplitAlgorithms; "" is the default,
	// range_equally_divide (defaultNamespaceBundleSplitAlgorithm).
	Algorithm string
	// Boundaries are the positions specified_positions_divide splits at
	// (32-bit hashes; those outside the bundle are ignored).
	Boundaries []int64
	// Unload unloads the new bundles once split: their topics' producers
	// and consumers are closed and they are free for the next lookup
	// (the modular load manager; the extensible one ignores it, as
	// ExtensibleLoadManagerImpl.splitNamespaceBundleAsync takes no unload).
	Unload bool
}

// SplitAlgorithms are the split algorithms a broker supports, as Pulsar's
// supportedNamespaceBundleSplitAlgorithms lists them.
var SplitAlgorithms = bundles.Algorithms

var (
	// ErrInvalidSplit refuses a split request before any split: an
	// algorithm the broker does not support, specified_positions_divide
	// without positions, a bundle range that does not parse or that the
	// namespace does not have. The error says which, in Pulsar's words
	// (412 in the admin API).
	ErrInvalidSplit = errors.New("invalid bundle split request")
	// ErrSplitFailed is a split the algorithm's boundaries cannot make: a
	// bundle whose range is not larger than 1, a boundary outside the
	// bundle (Pulsar's IllegalArgumentException, which its admin API
	// answers 412 "Split bundle failed due to invalid request"). The error
	// says why.
	ErrSplitFailed = errors.New("Split bundle failed due to invalid request")
	// ErrSplitAlgorithmFailed is flow_or_qps_equally_divide asked by name:
	// Pulsar 4.0.8 gives that algorithm the load data it needs only when it
	// is the broker's default algorithm, and fails otherwise (500 in the
	// admin API, a ClassCastException). pulsarsim has no load data, and
	// its default is range_equally_divide.
	ErrSplitAlgorithmFailed = errors.New("class org.apache.pulsar.common.naming.BundleSplitOption cannot be cast to " +
		"class org.apache.pulsar.common.naming.FlowOrQpsEquallyDivideBundleSplitOption " +
		"(org.apache.pulsar.common.naming.BundleSplitOption and " +
		"org.apache.pulsar.common.naming.FlowOrQpsEquallyDivideBundleSplitOption are in unnamed module of loader 'app')")
	// ErrSplitNowhere is a split whose algorithm found nowhere to split
	// with the extensible load manager, which fails it
	// (ExtensibleLoadManagerImpl.splitNamespaceBundleAsync: an
	// IllegalStateException, 500 in the admin API) where the modular one
	// leaves the bundle as it is and succeeds.
	ErrSplitNowhere = errors.New("no split boundary found")
)

// CheckSplitOptions checks a split request's algorithm as Pulsar does
// before anything else (ErrInvalidSplit, in its words).
func CheckSplitOptions(opts SplitOptions) error {
	if strings.TrimSpace(opts.Algorithm) == "" {
		return nil
	}
	if !slices.Contains(SplitAlgorithms, opts.Algorithm) {
		return errorf(ErrInvalidSplit, "Unsupported namespace bundle split algorithm, supported algorithms are [%s]",
			strings.Join(SplitAlgorithms, ", "))
	}
	if opts.Algorithm == bundles.SpecifiedPositionsDivide && len(opts.Boundaries) == 0 {
		return errorf(ErrInvalidSplit, "With specified_positions_divide split algorithm, splitBoundaries must not be empty")
	}
	return nil
}

// ParseBundleRange reads a bundle range of namespace ns as Pulsar's admin
// API reads it (PulsarWebResource.validateNamespaceBundleRange): two
// numbers, hexadecimal with 0x or decimal, joined by "_". It refuses, with
// ErrInvalidSplit in Pulsar's words, what does not parse; CheckBundle then
// checks that the namespace has it.
func ParseBundleRange(ns, rng string) (Bundle, error) {
	lo, hi, ok := strings.Cut(rng, "_")
	if !ok {
		return Bundle{}, errorf(ErrInvalidSplit, "Invalid bundle range: %s", rng)
	}
	hi, _, _ = strings.Cut(hi, "_")
	l, err := decodeLong(lo)
	if err != nil {
		return Bundle{}, err
	}
	h, err := decodeLong(hi)
	if err != nil {
		return Bundle{}, err
	}
	if l > h {
		return Bundle{}, errorf(ErrInvalidSplit, "Invalid range: [%d..%d)", l, h)
	}
	if l < 0 || h > 0xffffffff {
		return Bundle{}, errorf(ErrInvalidSplit, "Cannot find bundle %s/%s in the bundles list", ns, rng)
	}
	return Bundle{Namespace: ns, Lower: uint32(l), Upper: uint32(h)}, nil
}

// decodeLong reads a number as Java's Long.decode does (a sign, then 0x,
// 0X or # for hexadecimal, a leading 0 for octal), refusing what it
// refuses in its words.
func decodeLong(s string) (int64, error) {
	digits, base, neg := s, 10, false
	if strings.HasPrefix(digits, "-") || strings.HasPrefix(digits, "+") {
		neg, digits = digits[0] == '-', digits[1:]
	}
	switch {
	case strings.HasPrefix(digits, "0x"), strings.HasPrefix(digits, "0X"):
		digits, base = digits[2:], 16
	case strings.HasPrefix(digits, "#"):
		digits, base = digits[1:], 16
	case strings.HasPrefix(digits, "0") && len(digits) > 1:
		digits, base = digits[1:], 8
	}
	if s == "" {
		return 0, errorf(ErrInvalidSplit, "Zero length string")
	}
	v, err := strconv.ParseInt(digits, base, 64)
	if err != nil || digits == "" || digits[0] == '-' || digits[0] == '+' {
		if base == 10 {
			return 0, errorf(ErrInvalidSplit, "For input string: %q", digits)
		}
		return 0, errorf(ErrInvalidSplit, "For input string: %q under radix %d", digits, base)
	}
	if neg {
		v = -v
	}
	return v, nil
}

// CheckBundle checks that bd is one of its namespace's bundles now
// (ErrInvalidSplit in Pulsar's words otherwise), and that the namespace
// exists (ErrNamespaceNotFound).
func (b *Broker) CheckBundle(bd Bundle) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.namespaceExistsLocked(bd.Namespace) {
		return ErrNamespaceNotFound
	}
	if err := b.data.Owners.Validate(bd); err != nil {
		return errorf(ErrInvalidSplit, "%s", err)
	}
	return nil
}

// LookupBundle answers where bundle bd is served, as Pulsar's admin API
// finds the owner of a bundle it acts on (validateBundleOwnership with
// readOnly false): as a lookup of one of its topics would be answered,
// assigning it when nobody owns it (at the leader with the modular load
// manager; Redirect says to ask the broker named, with Authoritative).
func (b *Broker) LookupBundle(bd Bundle, authoritative bool) (LookupResult, error) {
	b.mu.Lock()
	a := b.lookupBundleLocked(bd, authoritative, bd.String())
	b.mu.Unlock()
	if a.failed {
		return LookupResult{}, errors.New(a.msg)
	}
	return b.lookupResult(a), nil
}

// SplitBundle splits bundle bd, which this broker must own (ErrNotOwner
// otherwise; a lone broker owns everything), as opts says, and returns the
// new bundles in hash order, all owned by this broker (or free, with
// Unload and the modular load manager). With the modular load manager it
// returns no bundle and no error when the algorithm finds nowhere to
// split, as Pulsar does then (the extensible one fails with
// ErrSplitNowhere): topic_count_equally_divide and
// specified_positions_divide for a bundle holding fewer than two topics,
// specified_positions_divide for positions all outside the bundle. Its
// refusals: ErrInvalidSplit (CheckSplitOptions, CheckBundle),
// ErrNamespaceNotFound, ErrSplitFailed, ErrSplitAlgorithmFailed.
func (b *Broker) SplitBundle(bd Bundle, opts SplitOptions) ([]Bundle, error) {
	if err := CheckSplitOptions(opts); err != nil {
		return nil, err
	}
	if err := b.CheckBundle(bd); err != nil {
		return nil, err
	}
	b.mu.Lock()
	o := b.data.Owners
	if o.Clustered() && !o.Owns(b.node, bd) {
		b.mu.Unlock()
		return nil, ErrNotOwner
	}
	var cuts []uint32
	switch opts.Algorithm {
	case "", bundles.RangeEquallyDivide:
		cuts = []uint32{bundles.Middle(bd)}
	case bundles.TopicCountEquallyDivide:
		if mid, ok := bundles.TopicCountMiddle(b.bundleTopicHashesLocked(bd)); ok {
			cuts = []uint32{mid}
		}
	case bundles.SpecifiedPositionsDivide:
		if len(b.bundleTopicHashesLocked(bd)) > 1 {
			cuts = bundles.Positions(bd, opts.Boundaries)
		}
	case bundles.FlowOrQpsEquallyDivide:
		b.mu.Unlock()
		return nil, ErrSplitAlgorithmFailed
	}
	if len(cuts) == 0 {
		b.mu.Unlock()
		if b.cfg.loadManager == ExtensibleLoadManager {
			return nil, errorf(ErrSplitNowhere, "Bundle %s not found under namespace", bd)
		}
		return nil, nil
	}
	children, err := o.SplitBundle(bd, cuts)
	if err != nil {
		b.mu.Unlock()
		return nil, fmt.Errorf("%w: %v", ErrSplitFailed, err)
	}
	unload := opts.Unload && b.cfg.loadManager == ModularLoadManager
	if unload && o.Clustered() {
		for _, child := range children {
			o.Free(child)
		}
	}
	b.mu.Unlock()
	if unload {
		for _, child := range children {
			b.releaseBundle(child, nil)
		}
	}
	return children, nil
}

// bundleTopicHashesLocked returns the hashes of the topics of bd, as
// Pulsar's getOwnedTopicListForNamespaceBundle lists them: the topics of
// its namespace that exist, and every partition of its partitioned topics,
// that fall in bd. Once the namespace has a topic, its __change_events
// system topic counts too: Pulsar creates it when the first topic of a
// namespace is loaded (topic-level policies are on by default), and lists
// it with the others, though pulsarsim keeps no such topic.
func (b *Broker) bundleTopicHashesLocked(bd Bundle) []uint32 {
	seen := map[string]bool{}
	var out []uint32
	add := func(full string) {
		if seen[full] {
			return
		}
		seen[full] = true
		if h := bundles.Hash(full); h >= bd.Lower && (h < bd.Upper || h == bd.Upper && bd.Upper == 0xffffffff) {
			out = append(out, h)
		}
	}
	for _, full := range b.topicNamesLocked() {
		if tn, err := ParseTopicName(full); err == nil && tn.NamespaceName() == bd.Namespace {
			add(tn.String())
			add("persistent://" + bd.Namespace + "/__change_events")
		}
	}
	for base, n := range b.data.Partitioned {
		tn, err := ParseTopicName(base)
		if err != nil || tn.NamespaceName() != bd.Namespace {
			continue
		}
		for i := range n {
			add(tn.PartitionName(i).String())
		}
	}
	return out
}

// LargestBundle returns the bundle of namespace ns holding the most
// persistent topics, as Pulsar's split finds the bundle named LARGEST
// (NamespaceBundleFactory.getBundleWithHighestTopicsAsync): the topics
// that exist, partitions as themselves, and the namespace's __change_events
// once it has a topic (bundleTopicHashesLocked); the first in hash order on
// a tie. ok is false when the namespace has no persistent topic.
func (b *Broker) LargestBundle(ns string) (bd Bundle, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	counts := map[Bundle]int{}
	used := false
	for _, full := range b.topicNamesLocked() {
		if tn, err := ParseTopicName(full); err == nil && tn.NamespaceName() == ns {
			used = true
			if tn.Persistent {
				counts[b.data.Owners.Of(ns, tn.String())]++
			}
		}
	}
	if used {
		counts[b.data.Owners.Of(ns, "persistent://"+ns+"/__change_events")]++
	}
	for _, cand := range b.data.Owners.Bundles(ns) {
		if n := counts[cand]; n > 0 && (!ok || n > counts[bd]) {
			bd, ok = cand, true
		}
	}
	return bd, ok
}

// SetNamespaceBundles gives namespace ns n bundles of equal ranges, or the
// bundles between boundaries when given (sorted, the first 0, the last
// 0xffffffff: a namespace created with its policies' `bundles`), and
// forgets who owned its bundles before. A namespace created anew starts
// so, as Pulsar writes a new namespace's bundles into its policies.
func (b *Broker) SetNamespaceBundles(ns string, n int, boundaries []uint32) {
	if len(boundaries) < 2 {
		boundaries = bundles.Boundaries(n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data.Owners.SetBoundaries(ns, boundaries)
}

// SplitBundle splits bundle bd at its owner, as `pulsar-admin namespaces
// split-bundle` does (Broker.SplitBundle): a bundle nobody owns is first
// assigned, as the admin API's ownership check assigns it (asked of the
// leader, which picks the owner with the modular load manager).
func (c *Cluster) SplitBundle(bd Bundle, opts SplitOptions) ([]Bundle, error) {
	if err := CheckSplitOptions(opts); err != nil {
		return nil, err
	}
	c.st.mu.Lock()
	at := c.st.data.Owners.Leader()
	c.st.mu.Unlock()
	auth := false
	for range 4 {
		b := c.Broker(at)
		if b == nil {
			return nil, errors.New("broker: no broker of the cluster is alive")
		}
		if err := b.CheckBundle(bd); err != nil {
			return nil, err
		}
		b.mu.Lock()
		a := b.lookupBundleLocked(bd, auth, bd.String())
		b.mu.Unlock()
		switch {
		case a.failed:
			return nil, errors.New(a.msg)
		case a.self:
			return b.SplitBundle(bd, opts)
		}
		at, auth = a.node, a.authoritative || a.connect
	}
	return nil, fmt.Errorf("broker: no owner found for bundle %s", bd)
}
