package dispatch

import (
	"slices"
	"strconv"
)

// selector maps a sticky-key hash to a Key_Shared consumer.
type selector interface {
	add(c *consumer) error
	remove(c *consumer)
	// selectHash returns the consumer owning hash h, or nil.
	selectHash(h int32) *consumer
	// hash reduces a sticky key to this selector's hash space.
	hash(key []byte) int32
}

// ringPoint is one point of the consistent-hash ring: the selected consumer
// and the consumers whose point collided with it, in arrival order.
type ringPoint struct {
	hash      int32
	selected  *consumer
	colliding []*consumer
}

// hashRing is Pulsar 4.0's ConsistentHashingStickyKeyConsumerSelector: each
// consumer puts `points` points on a ring over 1..65535 at
// StickyKeyHash(name + "\0" + nameIndex + "\0" + i); a key goes to the first
// point at or after its hash, wrapping to the first point. On a collision the
// consumer already there keeps the point; the newcomer takes it over when that
// one leaves. nameIndex tells apart live consumers sharing one name: each gets
// the smallest index not used by another live consumer with that name.
type hashRing struct {
	points     int
	ring       []*ringPoint // sorted by hash
	byHash     map[int32]*ringPoint
	nameIndex  map[*consumer]int
	namesInUse map[string]map[int]bool
}

func newHashRing(points int) *hashRing {
	return &hashRing{
		points:     points,
		byHash:     make(map[int32]*ringPoint),
		nameIndex:  make(map[*consumer]int),
		namesInUse: make(map[string]map[int]bool),
	}
}

func (r *hashRing) hash(key []byte) int32 { return StickyKeyHash(AutoSplit, key) }

func (r *hashRing) pointHash(name string, nameIndex, i int) int32 {
	key := name + "\x00" + strconv.Itoa(nameIndex) + "\x00" + strconv.Itoa(i)
	return StickyKeyHash(AutoSplit, []byte(key))
}

func (r *hashRing) add(c *consumer) error {
	used := r.namesInUse[c.spec.Name]
	if used == nil {
		used = make(map[int]bool)
		r.namesInUse[c.spec.Name] = used
	}
	idx := 0
	for used[idx] {
		idx++
	}
	used[idx] = true
	r.nameIndex[c] = idx
	for i := 0; i < r.points; i++ {
		h := r.pointHash(c.spec.Name, idx, i)
		if p, ok := r.byHash[h]; ok {
			if p.selected != c && !slices.Contains(p.colliding, c) {
				p.colliding = append(p.colliding, c)
			}
			continue
		}
		p := &ringPoint{hash: h, selected: c}
		r.byHash[h] = p
		at, _ := slices.BinarySearchFunc(r.ring, h, cmpPoint)
		r.ring = slices.Insert(r.ring, at, p)
	}
	return nil
}

func cmpPoint(p *ringPoint, h int32) int {
	switch {
	case p.hash < h:
		return -1
	case p.hash > h:
		return 1
	}
	return 0
}

func (r *hashRing) remove(c *consumer) {
	idx, ok := r.nameIndex[c]
	if !ok {
		return
	}
	delete(r.nameIndex, c)
	if used := r.namesInUse[c.spec.Name]; used != nil {
		delete(used, idx)
		if len(used) == 0 {
			delete(r.namesInUse, c.spec.Name)
		}
	}
	for i := 0; i < r.points; i++ {
		h := r.pointHash(c.spec.Name, idx, i)
		p, ok := r.byHash[h]
		if !ok {
			continue
		}
		if p.selected == c {
			if len(p.colliding) > 0 {
				p.selected = p.colliding[0]
				p.colliding = p.colliding[1:]
				continue
			}
			delete(r.byHash, h)
			at, found := slices.BinarySearchFunc(r.ring, h, cmpPoint)
			if found {
				r.ring = slices.Delete(r.ring, at, at+1)
			}
			continue
		}
		p.colliding = slices.DeleteFunc(p.colliding, func(o *consumer) bool { return o == c })
	}
}

func (r *hashRing) selectHash(h int32) *consumer {
	if len(r.ring) == 0 {
		return nil
	}
	at, _ := slices.BinarySearchFunc(r.ring, h, cmpPoint)
	if at == len(r.ring) {
		at = 0
	}
	return r.ring[at].selected
}

// stickyRange is one consumer-owned hash range of the STICKY selector.
type stickyRange struct {
	Range
	c *consumer
}

// rangeSelector is Pulsar's HashRangeExclusiveStickyKeyConsumerSelector: each
// STICKY consumer owns the inclusive hash ranges it declared; ranges may not
// overlap; a hash outside every range has no consumer.
type rangeSelector struct {
	ranges []stickyRange // sorted by Start
}

func (s *rangeSelector) hash(key []byte) int32 { return StickyKeyHash(Sticky, key) }

func (s *rangeSelector) add(c *consumer) error {
	rs := c.spec.Ranges
	if len(rs) == 0 {
		return ErrConsumerAssign
	}
	mine := slices.Clone(rs)
	slices.SortFunc(mine, func(a, b Range) int { return int(a.Start) - int(b.Start) })
	for i, r := range mine {
		if r.Start < 0 || r.End > 65535 || r.Start > r.End {
			return ErrConsumerAssign
		}
		if i > 0 && mine[i-1].End >= r.Start {
			return ErrConsumerAssign
		}
		for _, o := range s.ranges {
			if r.Start <= o.End && o.Start <= r.End {
				return ErrConsumerAssign
			}
		}
	}
	for _, r := range mine {
		s.ranges = append(s.ranges, stickyRange{r, c})
	}
	slices.SortFunc(s.ranges, func(a, b stickyRange) int { return int(a.Start) - int(b.Start) })
	return nil
}

func (s *rangeSelector) remove(c *consumer) {
	s.ranges = slices.DeleteFunc(s.ranges, func(r stickyRange) bool { return r.c == c })
}

func (s *rangeSelector) selectHash(h int32) *consumer {
	// first range with End >= h
	at, _ := slices.BinarySearchFunc(s.ranges, h, func(r stickyRange, h int32) int {
		if r.End < h {
			return -1
		}
		return 1
	})
	if at < len(s.ranges) && s.ranges[at].Start <= h {
		return s.ranges[at].c
	}
	return nil
}
