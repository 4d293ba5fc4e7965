package testkit

import "github.com/pulsarsim/pulsarsim/broker"

// SplitOption says how SplitBundle splits a bundle; without one it splits
// in the middle of its range (range_equally_divide) and keeps the new
// bundles with the owner.
type SplitOption func(*broker.SplitOptions)

// SplitUnload unloads the new bundles once split (Pulsar's unload=true):
// their topics' producers and consumers are closed and look them up again,
// and the next lookup assigns each bundle anew. The extensible load manager
// ignores it, as Pulsar's does.
func SplitUnload() SplitOption { return func(o *broker.SplitOptions) { o.Unload = true } }

// SplitByTopicCount splits between the middle two topics of the bundle
// (topic_count_equally_divide); a bundle of fewer than two topics is left
// as it is.
func SplitByTopicCount() SplitOption {
	return func(o *broker.SplitOptions) { o.Algorithm = "topic_count_equally_divide" }
}

// SplitAt splits at the hash positions given (specified_positions_divide):
// those inside the bundle; a bundle of fewer than two topics, or positions
// all outside it, leave it as it is.
func SplitAt(positions ...uint32) SplitOption {
	return func(o *broker.SplitOptions) {
		o.Algorithm = "specified_positions_divide"
		for _, p := range positions {
			o.Boundaries = append(o.Boundaries, int64(p))
		}
	}
}

func splitOptions(opts []SplitOption) broker.SplitOptions {
	var o broker.SplitOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

func ranges(bs []broker.Bundle) []string {
	out := make([]string, len(bs))
	for i, bd := range bs {
		out[i] = bd.Range()
	}
	return out
}

// SplitBundle splits bundle ("0x00000000_0x40000000") of namespace ns at
// its owner, as `pulsar-admin namespaces split-bundle` does, a bundle
// nobody owns being assigned first, and returns the new bundles' ranges in
// hash order (none when the algorithm found nowhere to split; the
// extensible load manager fails the test then, as Pulsar's fails the
// split). Both halves
// stay with the owner, and its loaded topics with them, unless SplitUnload.
// It fails the test for a bundle the namespace does not have or one too
// narrow to split.
func (c *Cluster) SplitBundle(ns, bundle string, opts ...SplitOption) []string {
	c.tb.Helper()
	bd, err := broker.ParseBundleRange(ns, bundle)
	c.must(err, "split bundle %s/%s", ns, bundle)
	got, err := c.srv.SplitBundle(bd, splitOptions(opts))
	c.must(err, "split bundle %s", bd)
	return ranges(got)
}

// Bundles returns the ranges of namespace ns's bundles, in hash order.
func (c *Cluster) Bundles(ns string) []string {
	return ranges(c.srv.Broker(0).Bundles(ns))
}

// SplitBundle splits bundle ("0x00000000_0x40000000") of namespace ns of a
// lone broker, as Cluster.SplitBundle does, and returns the new bundles'
// ranges. In a cluster, call the cluster's.
func (b *Broker) SplitBundle(ns, bundle string, opts ...SplitOption) []string {
	b.tb.Helper()
	bd, err := broker.ParseBundleRange(ns, bundle)
	b.must(err, "split bundle %s/%s", ns, bundle)
	got, err := b.srv.SplitBundle(bd, splitOptions(opts))
	b.must(err, "split bundle %s", bd)
	return ranges(got)
}

// Bundles returns the ranges of namespace ns's bundles, in hash order.
func (b *Broker) Bundles(ns string) []string { return ranges(b.srv.Bundles(ns)) }
