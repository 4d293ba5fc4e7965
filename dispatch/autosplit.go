package dispatch

import "slices"

// autoSplitRangeSize is the hash space of the auto-split selector.
const autoSplitRangeSize = 65536

// splitRange is one consumer's range of the auto-split selector: the hashes
// after the previous range's end up to end, inclusive.
type splitRange struct {
	end int32
	c   *consumer
}

// autoSplitSelector is Pulsar's HashRangeAutoSplitStickyKeyConsumerSelector,
// used for AUTO_SPLIT consumers when subscriptionKeySharedUseConsistentHashing
// is off: the first consumer owns the whole hash space; each new consumer
// takes the lower half of the largest range; a leaving consumer's range goes
// to the consumer of the next range (or, for the last range, the consumer of
// the previous one takes it over).
type autoSplitSelector struct {
	ranges []splitRange // sorted by end
}

func (s *autoSplitSelector) hash(key []byte) int32 { return Murmur31(key) % autoSplitRangeSize }

func (s *autoSplitSelector) add(c *consumer) error {
	if len(s.ranges) == 0 {
		s.ranges = []splitRange{{end: autoSplitRangeSize, c: c}}
		return nil
	}
	// The largest range, the first one on a tie.
	big, size := 0, int32(0)
	for i, r := range s.ranges {
		lower := int32(0)
		if i > 0 {
			lower = s.ranges[i-1].end
		}
		if r.end-lower > size {
			big, size = i, r.end-lower
		}
	}
	if size <= 1 {
		return ErrConsumerAssign
	}
	split := s.ranges[big].end - size/2
	s.ranges = slices.Insert(s.ranges, big, splitRange{end: split, c: c})
	return nil
}

func (s *autoSplitSelector) remove(c *consumer) {
	i := slices.IndexFunc(s.ranges, func(r splitRange) bool { return r.c == c })
	if i < 0 {
		return
	}
	if i == len(s.ranges)-1 && len(s.ranges) > 1 {
		// The last range keeps its end; the previous range's consumer takes it.
		s.ranges[i].c = s.ranges[i-1].c
		s.ranges = slices.Delete(s.ranges, i-1, i)
		return
	}
	s.ranges = slices.Delete(s.ranges, i, i+1)
}

func (s *autoSplitSelector) selectHash(h int32) *consumer {
	at, _ := slices.BinarySearchFunc(s.ranges, h, func(r splitRange, h int32) int {
		if r.end < h {
			return -1
		}
		return 1
	})
	if at < len(s.ranges) {
		return s.ranges[at].c
	}
	return nil
}
