package bundles

import (
	"errors"
	"fmt"
	"slices"
)

// A bundle split replaces one bundle of a namespace by two or more that
// cover its range, as Pulsar's NamespaceBundleFactory.splitBundles does; the
// split algorithms (NamespaceBundleSplitAlgorithm) choose where.

// The split algorithms' names, as Pulsar's supportedNamespaceBundleSplitAlgorithms
// lists them.
const (
	// RangeEquallyDivide splits a bundle in the middle of its range (the
	// default, defaultNamespaceBundleSplitAlgorithm).
	RangeEquallyDivide = "range_equally_divide"
	// TopicCountEquallyDivide splits a bundle between the hashes of the
	// middle two of its topics, so that each half holds as many.
	TopicCountEquallyDivide = "topic_count_equally_divide"
	// SpecifiedPositionsDivide splits a bundle at the positions given.
	SpecifiedPositionsDivide = "specified_positions_divide"
	// FlowOrQpsEquallyDivide splits a bundle so that no part carries more
	// than the load manager's bundle limits of message rate and throughput.
	FlowOrQpsEquallyDivide = "flow_or_qps_equally_divide"
)

// Algorithms are the split algorithms a broker supports, in Pulsar's order.
var Algorithms = []string{RangeEquallyDivide, TopicCountEquallyDivide, SpecifiedPositionsDivide, FlowOrQpsEquallyDivide}

// ErrInvalidSplit is the kind of every refusal of SplitBundle: Pulsar's
// IllegalArgumentException, which its admin API answers 412.
var ErrInvalidSplit = errors.New("invalid bundle split")

// splitError is a refusal of a split in Pulsar's words, of kind
// ErrInvalidSplit.
type splitError struct{ msg string }

func (e *splitError) Error() string        { return e.msg }
func (e *splitError) Is(target error) bool { return target == ErrInvalidSplit }

func invalid(format string, args ...any) error {
	return &splitError{msg: fmt.Sprintf(format, args...)}
}

// Validate checks that bd is one of its namespace's bundles now: its lower
// end is a boundary of the namespace and its upper end the next one. The
// refusal is in Pulsar's words (NamespaceBundles.validateBundle), of kind
// ErrInvalidSplit.
func (t *Table) Validate(bd Bundle) error {
	bs := t.boundsOf(bd.Namespace)
	i, found := slices.BinarySearch(bs, bd.Lower)
	if !found || i+1 >= len(bs) {
		return invalid("Cannot find bundle %s in the bundles list", bd)
	}
	if bs[i+1] != bd.Upper {
		want := Bundle{Namespace: bd.Namespace, Lower: bs[i], Upper: bs[i+1]}
		return invalid("Invalid upper boundary for bundle %s. Expected upper boundary of %s", bd, want)
	}
	return nil
}

// SplitBundle splits bd at the boundaries at (each strictly inside its
// range; their order does not matter, a repeated one counts once) and
// returns the new bundles in hash order. The owner of bd, if it has one,
// owns every new bundle; bd itself is gone. It refuses, of kind
// ErrInvalidSplit, a bundle the namespace does not have, a bundle whose
// range is not larger than 1, no boundary, and a boundary outside the range.
func (t *Table) SplitBundle(bd Bundle, at []uint32) ([]Bundle, error) {
	if err := t.Validate(bd); err != nil {
		return nil, err
	}
	if uint64(bd.Upper)-uint64(bd.Lower) <= 1 {
		return nil, invalid("%s bundle can't be split further since range not larger than 1", bd)
	}
	cuts := slices.Clone(at)
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	if len(cuts) == 0 || cuts[0] <= bd.Lower || cuts[len(cuts)-1] >= bd.Upper {
		return nil, invalid("The given fixed keys must between the key range of the %s bundle", bd)
	}
	bs := t.boundsOf(bd.Namespace)
	i, _ := slices.BinarySearch(bs, bd.Lower)
	t.bounds[bd.Namespace] = slices.Insert(slices.Clone(bs), i+1, cuts...)
	edges := append(append([]uint32{bd.Lower}, cuts...), bd.Upper)
	out := make([]Bundle, 0, len(cuts)+1)
	for k := 0; k+1 < len(edges); k++ {
		out = append(out, Bundle{Namespace: bd.Namespace, Lower: edges[k], Upper: edges[k+1]})
	}
	if n, ok := t.owner[bd]; ok {
		delete(t.owner, bd)
		for _, child := range out {
			t.owner[child] = n
		}
	}
	delete(t.prefer, bd)
	return out, nil
}

// SetBoundaries gives namespace ns the bundles between the sorted
// boundaries bs (at least two, the first 0, the last 0xffffffff), as a
// namespace created with its bundles named has them, and forgets who owned
// the namespace's bundles before.
func (t *Table) SetBoundaries(ns string, bs []uint32) {
	t.Forget(ns)
	t.bounds[ns] = slices.Clone(bs)
}

// AllBoundaries returns a copy of the bundle boundaries of every namespace
// the table knows, by namespace: what Pulsar keeps of a namespace's bundles
// in its metadata store (SetBoundaries gives them back).
func (t *Table) AllBoundaries() map[string][]uint32 {
	out := make(map[string][]uint32, len(t.bounds))
	for ns, bs := range t.bounds {
		out[ns] = slices.Clone(bs)
	}
	return out
}

// Forget drops what the table knows of namespace ns: its bundles (the next
// use gives it DefaultCount) and their owners, as when it is deleted.
func (t *Table) Forget(ns string) {
	delete(t.bounds, ns)
	for bd := range t.owner {
		if bd.Namespace == ns {
			delete(t.owner, bd)
		}
	}
	for bd := range t.prefer {
		if bd.Namespace == ns {
			delete(t.prefer, bd)
		}
	}
}

// Middle is where range_equally_divide splits bd: the middle of its range,
// rounded down.
func Middle(bd Bundle) uint32 { return bd.Lower + (bd.Upper-bd.Lower)/2 }

// TopicCountMiddle is where topic_count_equally_divide splits a bundle
// holding topics of these hashes: halfway (rounded down) between the
// hashes ranked n/2-1 and n/2 (from 0) once sorted. ok is false for fewer
// than two topics: Pulsar then leaves the bundle as it is.
func TopicCountMiddle(hashes []uint32) (uint32, bool) {
	if len(hashes) <= 1 {
		return 0, false
	}
	hs := slices.Clone(hashes)
	slices.Sort(hs)
	start, end := hs[max(len(hs)/2-1, 0)], hs[len(hs)/2]
	return start + (end-start)/2, true
}

// Positions is where specified_positions_divide splits bd at the positions
// given: those strictly inside its range, sorted. None (a nil result)
// leaves the bundle as it is.
func Positions(bd Bundle, positions []int64) []uint32 {
	var out []uint32
	for _, p := range positions {
		if p > int64(bd.Lower) && p < int64(bd.Upper) {
			out = append(out, uint32(p))
		}
	}
	slices.Sort(out)
	return out
}
