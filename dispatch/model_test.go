package dispatch

import (
	"cmp"
	"errors"
	"flag"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pulsarsim/pulsarsim/cursor"
	"pgregory.net/rapid"
)

// TestMain raises rapid's defaults for this package to 3000 cases (1000
// under -short) of about 100 steps each, unless the -rapid.checks / -rapid.steps flags or the
// RAPID_CHECKS / RAPID_STEPS variables say otherwise.
func TestMain(m *testing.M) {
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	checks := "3000"
	if testing.Short() {
		checks = "5000" // rapid divides the count by 5 under -short
	}
	for name, def := range map[string]string{"checks": checks, "steps": "100"} {
		if !set["rapid."+name] && os.Getenv("RAPID_"+strings.ToUpper(name)) == "" {
			if err := flag.Set("rapid."+name, def); err != nil {
				panic(err)
			}
		}
	}
	os.Exit(m.Run())
}

// refModel is the reference model: a deliberately simple account of what each
// entry's state must be, built from the rules rather than from the
// dispatcher's data structures. Which consumer gets an entry is the
// dispatcher's choice; the model checks the choice is allowed and records it.
type refModel struct {
	typ        SubType
	partition  int
	topic      string
	ksMode     KeySharedMode
	outOfOrder bool // Key_Shared allowOutOfOrderDelivery
	maxUnack   int
	// maxUnackSub is the subscription-wide limit (0: none) and subBlocked
	// whether it holds the subscription back from new reads.
	maxUnackSub int
	subBlocked  bool

	log     testLog
	acked   map[int64]bool   // fully acknowledged
	bits    map[int64][]bool // partial batch acks: true = index still unacked
	pending map[int64]uint64 // entry -> consumer holding it
	pmsgs   map[int64]int32  // messages still charged for a pending entry
	counts  map[int64]int32  // redelivery counts (Shared/Key_Shared)

	consumers map[uint64]ConsumerSpec
	joinSeq   map[uint64]int
	seq       int
	active    uint64
	hasActive bool
	blocked   map[uint64]bool // Shared/Key_Shared consumers blocked on unacked messages

	// Time, and the Failover switch delay after the active consumer changed.
	now       int64
	switching bool
	switchAt  int64
}

// unacked is the number of messages pending at consumer id.
func (m *refModel) unacked(id uint64) int {
	n := 0
	for e, c := range m.pending {
		if c == id {
			n += int(m.pmsgs[e])
		}
	}
	return n
}

func (m *refModel) end() int64 { return m.log.End() }

func (m *refModel) multi() bool { return m.typ == Shared || m.typ == KeyShared }

// remaining is the number of unacked messages of e.
func (m *refModel) remaining(e int64) int32 {
	if m.acked[e] {
		return 0
	}
	if b, ok := m.bits[e]; ok {
		n := int32(0)
		for _, u := range b {
			if u {
				n++
			}
		}
		return n
	}
	return m.log.Info(e).Messages
}

func (m *refModel) ackSet(e int64) []int64 {
	b, ok := m.bits[e]
	if !ok {
		return nil
	}
	var w int64
	for i, u := range b {
		if u {
			w |= 1 << uint(i)
		}
	}
	return []int64{w}
}

func (m *refModel) ack(e int64) {
	m.acked[e] = true
	delete(m.bits, e)
	delete(m.counts, e)
	if !m.multi() {
		delete(m.pending, e)
		delete(m.pmsgs, e)
	}
}

// pickActive computes the Exclusive/Failover active consumer from the rules.
func (m *refModel) pickActive() (uint64, bool) {
	if len(m.consumers) == 0 {
		return 0, false
	}
	ids := slices.Collect(maps.Keys(m.consumers))
	slices.SortFunc(ids, func(a, b uint64) int {
		sa, sb := m.consumers[a], m.consumers[b]
		return cmp.Or(cmp.Compare(sa.Priority, sb.Priority), cmp.Compare(sa.Name, sb.Name),
			cmp.Compare(m.joinSeq[a], m.joinSeq[b]))
	})
	n := 0
	for n < len(ids) && m.consumers[ids[n]].Priority == m.consumers[ids[0]].Priority {
		n++
	}
	switch {
	case m.typ == Exclusive:
		return ids[0], true
	case m.partition >= 0:
		return ids[m.partition%n], true
	}
	ring := map[int32]int{}
	for i := 0; i < n; i++ {
		for j := 0; j < 100; j++ {
			ring[Murmur31([]byte(m.consumers[ids[i]].Name+strconv.Itoa(j)))] = i
		}
	}
	points := slices.Sorted(maps.Keys(ring))
	target := Murmur31([]byte(m.topic))
	at, _ := slices.BinarySearch(points, target)
	if at == len(points) {
		at = 0
	}
	return ids[ring[points[at]]], true
}

// rewindIfActiveChanged updates the active consumer; a change means a rewind,
// so nothing is in flight any more. On Failover a change starts the switch
// delay, unless one is already running.
func (m *refModel) rewindIfActiveChanged() {
	id, ok := m.pickActive()
	if ok != m.hasActive || id != m.active {
		clear(m.pending)
		clear(m.pmsgs)
		if ok && m.typ == Failover && !m.switching {
			m.switching, m.switchAt = true, m.now+DefaultFailoverDelay
		}
	}
	m.active, m.hasActive = id, ok
}

func overlaps(a, b []Range) bool {
	for _, x := range a {
		for _, y := range b {
			if x.Start <= y.End && y.Start <= x.End {
				return true
			}
		}
	}
	return false
}

// expectAddError predicts AddConsumer's error.
func (m *refModel) expectAddError(spec ConsumerSpec) error {
	switch m.typ {
	case Exclusive:
		if len(m.consumers) > 0 {
			return ErrConsumerBusy
		}
	case KeyShared:
		if len(m.consumers) > 0 && spec.KeySharedMode != m.ksMode {
			return ErrKeySharedModeMismatch
		}
		if len(m.consumers) > 0 && spec.AllowOutOfOrder != m.outOfOrder {
			return ErrOutOfOrderMismatch
		}
		if spec.KeySharedMode == Sticky {
			if len(spec.Ranges) == 0 {
				return ErrConsumerAssign
			}
			for i, r := range spec.Ranges {
				if r.Start < 0 || r.End > 65535 || r.Start > r.End ||
					overlaps(spec.Ranges[i:i+1], spec.Ranges[i+1:]) {
					return ErrConsumerAssign
				}
			}
			for _, o := range m.consumers {
				if overlaps(spec.Ranges, o.Ranges) {
					return ErrConsumerAssign
				}
			}
		}
	}
	return nil
}

type machine struct {
	d      *Dispatcher
	m      *refModel
	nextID uint64
}

var quarters = []Range{{0, 16383}, {16384, 32767}, {32768, 49151}, {49152, 65535}}

func (s *machine) consumerIDs() []uint64 {
	return slices.Sorted(maps.Keys(s.m.consumers))
}

func (s *machine) pickConsumer(t *rapid.T) uint64 {
	ids := s.consumerIDs()
	if len(ids) == 0 {
		t.Skip("no consumers")
	}
	return rapid.SampledFrom(ids).Draw(t, "consumer")
}

func (s *machine) pickEntry(t *rapid.T) int64 {
	if s.m.end() == 0 {
		t.Skip("empty log")
	}
	return rapid.Int64Range(0, s.m.end()-1).Draw(t, "entry")
}

func (s *machine) pendingOf(id uint64) []int64 {
	var out []int64
	for e, c := range s.m.pending {
		if c == id {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

func (s *machine) join(t *rapid.T) {
	m := s.m
	if len(m.consumers) >= 5 {
		t.Skip("enough consumers")
	}
	s.nextID++
	spec := ConsumerSpec{
		ID:       s.nextID,
		Name:     rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(t, "name"),
		Priority: int32(rapid.IntRange(0, 2).Draw(t, "priority")),
		Epoch:    -1,
	}
	if m.typ == KeyShared {
		spec.KeySharedMode = m.ksMode
		if rapid.IntRange(0, 9).Draw(t, "otherMode") == 0 {
			spec.KeySharedMode = 1 - m.ksMode
		}
		spec.AllowOutOfOrder = m.outOfOrder
		if rapid.IntRange(0, 9).Draw(t, "otherOrder") == 0 {
			spec.AllowOutOfOrder = !m.outOfOrder
		}
		if spec.KeySharedMode == Sticky {
			for _, q := range quarters {
				if rapid.Bool().Draw(t, "quarter") {
					spec.Ranges = append(spec.Ranges, q)
				}
			}
			if rapid.IntRange(0, 9).Draw(t, "badRange") == 0 {
				spec.Ranges = append(spec.Ranges, Range{Start: 70000, End: 10})
			}
		}
	}
	want := m.expectAddError(spec)
	got := s.d.AddConsumer(spec)
	if !errors.Is(got, want) || (want == nil) != (got == nil) {
		t.Fatalf("AddConsumer(%+v) = %v, want %v", spec, got, want)
	}
	if got != nil {
		return
	}
	if len(m.consumers) == 0 && m.typ == KeyShared {
		m.ksMode = spec.KeySharedMode
		m.outOfOrder = spec.AllowOutOfOrder
	}
	m.consumers[spec.ID] = spec
	m.seq++
	m.joinSeq[spec.ID] = m.seq
	if !m.multi() {
		m.rewindIfActiveChanged()
	}
}

func (s *machine) leave(t *rapid.T) {
	m := s.m
	id := s.pickConsumer(t)
	s.d.RemoveConsumer(id)
	delete(m.consumers, id)
	delete(m.blocked, id)
	if !m.multi() {
		if m.active == id {
			clear(m.pending)
			clear(m.pmsgs)
			m.hasActive = false
		}
		m.rewindIfActiveChanged()
		return
	}
	for _, e := range s.pendingOf(id) {
		delete(m.pending, e)
		delete(m.pmsgs, e)
	}
	if len(m.consumers) == 0 {
		clear(m.pending)
		clear(m.pmsgs)
		clear(m.counts)
	}
}

func (s *machine) flow(t *rapid.T) {
	m := s.m
	id := s.pickConsumer(t)
	s.d.Flow(id, rapid.IntRange(1, 10).Draw(t, "permits"))
	// A FLOW at the unacked limit blocks the consumer again.
	if m.multi() && m.maxUnack > 0 && m.unacked(id) >= m.maxUnack {
		m.blocked[id] = true
	}
}

// tick moves time on; a Failover switch whose delay has passed completes
// with a rewind.
func (s *machine) tick(t *rapid.T) {
	m := s.m
	m.now += rapid.Int64Range(0, 1500).Draw(t, "advance")
	s.d.SetTime(m.now)
	if m.switching && m.now >= m.switchAt {
		m.switching = false
		clear(m.pending)
		clear(m.pmsgs)
	}
}

func (s *machine) publish(t *rapid.T) {
	if s.m.end() >= 30 {
		t.Skip("log long enough")
	}
	msgs := int32(rapid.SampledFrom([]int{1, 1, 1, 2, 3, 4}).Draw(t, "messages"))
	key := rapid.SampledFrom([]string{"k0", "k1", "k2", "k3", "k4", "k5"}).Draw(t, "key")
	s.m.log.add(1, msgs, key)
}

func (s *machine) ackEntry(t *rapid.T, e int64) {
	m := s.m
	s.d.Ack(e)
	if m.multi() {
		// Acking a whole entry a consumer holds may unblock it at half
		// the limit.
		if c, ok := m.pending[e]; ok {
			delete(m.pending, e)
			delete(m.pmsgs, e)
			if m.unacked(c) <= m.maxUnack/2 {
				delete(m.blocked, c)
			}
		}
	}
	m.ack(e)
}

func (s *machine) ack(t *rapid.T) { s.ackEntry(t, s.pickEntry(t)) }

func (s *machine) ackPending(t *rapid.T) {
	ps := slices.Sorted(maps.Keys(s.m.pending))
	if len(ps) == 0 {
		t.Skip("nothing pending")
	}
	s.ackEntry(t, rapid.SampledFrom(ps).Draw(t, "pendingEntry"))
}

func (s *machine) ackBatch(t *rapid.T) {
	m := s.m
	e := s.pickEntry(t)
	size := int(m.log.Info(e).Messages)
	if size < 2 {
		t.Skip("not a batch")
	}
	var set int64 = 1<<uint(size) - 1
	var acking []int
	for i := 0; i < size; i++ {
		if rapid.Bool().Draw(t, "ackIndex") {
			set &^= 1 << uint(i)
			acking = append(acking, i)
		}
	}
	s.d.AckBatchIndexes(e, size, []int64{set})
	delete(m.counts, e)
	if m.acked[e] {
		// Already done (e.g. expired): the holder lets go of it.
		delete(m.pending, e)
		delete(m.pmsgs, e)
		return
	}
	b, ok := m.bits[e]
	if !ok {
		b = make([]bool, size)
		for i := range b {
			b[i] = true
		}
		m.bits[e] = b
	}
	for _, i := range acking {
		b[i] = false
	}
	if m.remaining(e) == 0 {
		if m.multi() {
			delete(m.pending, e)
			delete(m.pmsgs, e)
		}
		m.ack(e)
		return
	}
	if _, ok := m.pending[e]; ok && m.pmsgs[e] > m.remaining(e) {
		m.pmsgs[e] = m.remaining(e)
	}
}

func (s *machine) ackCumulative(t *rapid.T) {
	m := s.m
	id := s.pickConsumer(t)
	e := s.pickEntry(t)
	s.d.AckCumulative(id, e)
	if m.multi() {
		return
	}
	for x := int64(0); x <= e; x++ {
		m.ack(x)
	}
}

func (s *machine) expire(t *rapid.T) {
	m := s.m
	e := s.pickEntry(t)
	s.d.Expire(e)
	for x := int64(0); x <= e; x++ {
		m.ack(x) // Shared/Key_Shared keep expired entries pending
	}
}

func (s *machine) redeliverModel(id uint64, entries []int64) {
	m := s.m
	if !m.multi() {
		if m.hasActive && m.active == id && !m.switching {
			clear(m.pending)
			clear(m.pmsgs)
		}
		return
	}
	delete(m.blocked, id) // any redeliver request unblocks
	for _, e := range entries {
		if c, ok := m.pending[e]; !ok || c != id {
			continue
		}
		delete(m.pending, e)
		delete(m.pmsgs, e)
		if !m.acked[e] {
			m.counts[e]++
		}
	}
}

func (s *machine) nack(t *rapid.T) {
	id := s.pickConsumer(t)
	cands := s.pendingOf(id)
	if s.m.end() > 0 {
		cands = append(cands, rapid.Int64Range(0, s.m.end()-1).Draw(t, "stray"))
	}
	if len(cands) == 0 {
		t.Skip("nothing to nack")
	}
	ids := rapid.SliceOfN(rapid.SampledFrom(cands), 1, 4).Draw(t, "nackIDs")
	s.d.Redeliver(id, ids)
	s.redeliverModel(id, ids)
}

func (s *machine) redeliverAll(t *rapid.T) {
	id := s.pickConsumer(t)
	s.d.RedeliverAll(id)
	s.redeliverModel(id, s.pendingOf(id))
}

// updateSubBlock applies the subscription-wide limit to the messages now
// pending: blocked at the limit, unblocked under half of it. Within one step
// the pending messages only rise (a dispatch) or only fall, so the state
// after the step follows from the total at its end.
func (m *refModel) updateSubBlock() {
	if !m.multi() || m.maxUnackSub <= 0 {
		m.subBlocked = false
		return
	}
	total := 0
	for _, n := range m.pmsgs {
		total += int(n)
	}
	switch {
	case total >= m.maxUnackSub:
		m.subBlocked = true
	case m.subBlocked && total < m.maxUnackSub/2:
		m.subBlocked = false
	}
}

// waiting reports whether e is unacked and held by nobody.
func (s *machine) waiting(e int64) bool {
	_, p := s.m.pending[e]
	return !s.m.acked[e] && !p
}

func (s *machine) dispatch(t *rapid.T) { s.dispatchWith(t, nil) }

// dispatchLimited dispatches with a dispatch rate budget of a few messages
// and bytes: reads are shorter, and the rules hold all the same.
func (s *machine) dispatchLimited(t *rapid.T) {
	s.dispatchWith(t, &tokens{
		msgs: rapid.Int64Range(0, 6).Draw(t, "msgTokens"), bytes: rapid.Int64Range(0, 6).Draw(t, "byteTokens"),
		noMsgs: rapid.Bool().Draw(t, "noMsgLimit"), noBytes: rapid.Bool().Draw(t, "noByteLimit"),
	})
}

// dispatchWith dispatches under budget b (nil: none) and checks every
// delivery against the model; without a budget, also that an available
// consumer leaves nothing waiting.
func (s *machine) dispatchWith(t *rapid.T, b Budget) {
	m := s.m
	before := map[int64]bool{}
	for e := int64(0); e < m.end(); e++ {
		if s.waiting(e) {
			before[e] = true
		}
	}
	blockedAt := int64(-1) // the read position, while the subscription is blocked
	if m.subBlocked {
		blockedAt = s.d.Snapshot().ReadPosition
	}
	for _, dl := range s.d.DispatchWith(&m.log, nil, b) {
		e := dl.Entry
		spec, alive := m.consumers[dl.Consumer]
		switch {
		case !alive:
			t.Fatalf("entry %d sent to unknown consumer %d", e, dl.Consumer)
		case e < 0 || e >= m.end():
			t.Fatalf("entry %d outside the log", e)
		case m.acked[e]:
			t.Fatalf("acked entry %d sent", e)
		case blockedAt >= 0 && e >= blockedAt:
			t.Fatalf("entry %d read while the subscription is blocked at %d", e, blockedAt)
		}
		if c, ok := m.pending[e]; ok {
			t.Fatalf("entry %d sent to %d while pending at %d", e, dl.Consumer, c)
		}
		if !m.multi() && dl.Consumer != m.active {
			t.Fatalf("entry %d sent to %d, active is %d", e, dl.Consumer, m.active)
		}
		if !m.multi() && m.switching {
			t.Fatalf("entry %d sent during the Failover switch delay", e)
		}
		wantCount := int32(0)
		if m.multi() {
			wantCount = m.counts[e]
		}
		if dl.RedeliveryCount != wantCount {
			t.Fatalf("entry %d count %d, want %d", e, dl.RedeliveryCount, wantCount)
		}
		if !slices.Equal(dl.AckSet, m.ackSet(e)) {
			t.Fatalf("entry %d ack set %v, want %v", e, dl.AckSet, m.ackSet(e))
		}
		if dl.Messages != m.remaining(e) {
			t.Fatalf("entry %d charged %d messages, want %d", e, dl.Messages, m.remaining(e))
		}
		if m.typ == KeyShared {
			key := string(m.log.Info(e).Key)
			for w := range before {
				if w < e && string(m.log.Info(w).Key) == key {
					t.Fatalf("entry %d (key %s) overtook waiting entry %d", e, key, w)
				}
			}
			for p, c := range m.pending {
				if !m.outOfOrder && c != dl.Consumer && string(m.log.Info(p).Key) == key && !m.acked[p] {
					t.Fatalf("key %s sent to %d while %d holds entry %d", key, dl.Consumer, c, p)
				}
			}
			if m.ksMode == Sticky {
				h := StickyKeyHash(Sticky, []byte(key))
				if !overlaps([]Range{{h, h}}, spec.Ranges) {
					t.Fatalf("hash %d sent to consumer %d with ranges %v", h, dl.Consumer, spec.Ranges)
				}
			}
		}
		delete(before, e)
		m.pending[e] = dl.Consumer
		m.pmsgs[e] = dl.Messages
		if m.multi() && m.maxUnack > 0 && m.unacked(dl.Consumer) >= m.maxUnack {
			m.blocked[dl.Consumer] = true
		}
	}
	m.updateSubBlock()
	if b != nil {
		return
	}
	// Liveness: an available consumer leaves nothing waiting (Shared and
	// the active consumer of Exclusive/Failover).
	snap := s.d.Snapshot()
	anyAvail := false
	for _, c := range snap.Consumers {
		if c.Permits > 0 && !c.Blocked && (m.typ == Shared || c.Active) {
			anyAvail = true
		}
	}
	if anyAvail && m.typ != KeyShared && !m.switching {
		for e := int64(0); e < m.end(); e++ {
			if m.subBlocked && e >= snap.ReadPosition {
				break // unread entries wait for the subscription's unblock
			}
			if s.waiting(e) {
				t.Fatalf("entry %d left waiting with an available consumer: %+v", e, snap)
			}
		}
	}
}

// check verifies the invariants after every step.
func (s *machine) check(t *rapid.T) {
	m := s.m
	snap := s.d.Snapshot()
	cur := s.d.Cursor()
	m.updateSubBlock()
	if snap.SubscriptionBlocked != m.subBlocked {
		t.Fatalf("subscription blocked=%v, model %v (limit %d, pending %v)", snap.SubscriptionBlocked,
			m.subBlocked, m.maxUnackSub, m.pmsgs)
	}

	held := map[int64]uint64{}
	msgs := map[int64]int32{}
	for _, c := range snap.Consumers {
		sum := 0
		for _, p := range c.Pending {
			if o, ok := held[p.Entry]; ok {
				t.Fatalf("entry %d pending at %d and %d", p.Entry, o, c.ID)
			}
			held[p.Entry] = c.ID
			msgs[p.Entry] = p.Messages
			sum += int(p.Messages)
		}
		if m.multi() {
			if c.Unacked != sum {
				t.Fatalf("consumer %d unacked %d, pending messages %d", c.ID, c.Unacked, sum)
			}
			if c.Blocked != m.blocked[c.ID] {
				t.Fatalf("consumer %d blocked=%v at %d unacked (max %d), model %v", c.ID, c.Blocked, c.Unacked,
					m.maxUnack, m.blocked[c.ID])
			}
		} else if len(c.Pending) > 0 && !c.Active {
			t.Fatalf("standby %d holds entries", c.ID)
		}
	}
	if !maps.Equal(held, m.pending) {
		t.Fatalf("pending %v, model %v", held, m.pending)
	}
	if !maps.Equal(msgs, m.pmsgs) {
		t.Fatalf("pending messages %v, model %v", msgs, m.pmsgs)
	}
	inReplay := map[int64]bool{}
	for _, e := range snap.Replay {
		if _, ok := held[e]; ok {
			t.Fatalf("entry %d both pending and in replay", e)
		}
		inReplay[e] = true
	}
	var backlog int64
	for e := int64(0); e < m.end(); e++ {
		if cur.IsAcked(e) != m.acked[e] {
			t.Fatalf("entry %d acked=%v, model %v", e, cur.IsAcked(e), m.acked[e])
		}
		if m.acked[e] {
			continue
		}
		backlog++
		_, pending := held[e]
		// (During a Failover switch delay the rewind is still to come.)
		if !pending && !inReplay[e] && e < snap.ReadPosition && len(m.consumers) > 0 && !m.switching {
			t.Fatalf("entry %d lost: not acked, pending, in replay or unread (read %d)", e, snap.ReadPosition)
		}
	}
	if got := cur.Backlog(m.end()); got != backlog {
		t.Fatalf("backlog %d, model %d", got, backlog)
	}
	want := map[int64]int32{}
	if m.multi() {
		for e, n := range m.counts {
			if n > 0 {
				want[e] = n
			}
		}
	}
	got := snap.Redeliveries
	if got == nil {
		got = map[int64]int32{}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("counts %v, model %v", got, want)
	}
	if !m.multi() {
		if id, ok := s.d.Active(); ok != m.hasActive || id != m.active {
			t.Fatalf("active %d/%v, model %d/%v", id, ok, m.active, m.hasActive)
		}
		if at, ok := s.d.Switching(); ok != m.switching || (ok && at != m.switchAt) {
			t.Fatalf("switching %v until %d, model %v until %d", ok, at, m.switching, m.switchAt)
		}
	}
	if m.typ == KeyShared && !m.outOfOrder {
		keyHolder := map[string]uint64{}
		for e, c := range held {
			if m.acked[e] {
				continue
			}
			k := string(m.log.Info(e).Key)
			if o, ok := keyHolder[k]; ok && o != c {
				t.Fatalf("key %s pending at %d and %d", k, o, c)
			}
			keyHolder[k] = c
		}
	}
}

func TestDispatcherMatchesReferenceModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		typ := rapid.SampledFrom([]SubType{Exclusive, Shared, Failover, KeyShared, KeyShared, KeyShared}).Draw(t, "type")
		opts := DefaultOptions(typ)
		opts.Topic = "persistent://public/default/" + rapid.SampledFrom([]string{"t", "orders", "x1"}).Draw(t, "topic")
		opts.PartitionIndex = rapid.IntRange(-1, 3).Draw(t, "partition")
		opts.MaxUnackedPerConsumer = rapid.SampledFrom([]int{-1, 0, 4, 7}).Draw(t, "maxUnacked")
		opts.MaxUnackedPerSubscription = rapid.SampledFrom([]int{-1, 0, 5, 9}).Draw(t, "maxUnackedSub")
		maxUnackSub := max(opts.MaxUnackedPerSubscription, 0) // the default is never reached here
		opts.MaxRoundRobinBatch = rapid.SampledFrom([]int{1, 2, 20}).Draw(t, "rrBatch")
		opts.MaxReadBatch = rapid.SampledFrom([]int{1, 3, 100}).Draw(t, "readBatch")
		maxUnack := opts.MaxUnackedPerConsumer
		if maxUnack == 0 {
			maxUnack = DefaultMaxUnackedPerConsumer
		}
		if maxUnack < 0 {
			maxUnack = 0
		}
		s := &machine{
			d: New(opts, cursor.New(-1)),
			m: &refModel{
				typ:         typ,
				partition:   opts.PartitionIndex,
				topic:       opts.Topic,
				ksMode:      rapid.SampledFrom([]KeySharedMode{AutoSplit, Sticky}).Draw(t, "ksMode"),
				outOfOrder:  rapid.Bool().Draw(t, "outOfOrder"),
				maxUnack:    maxUnack,
				maxUnackSub: maxUnackSub,
				blocked:     map[uint64]bool{},
				acked:       map[int64]bool{},
				bits:        map[int64][]bool{},
				pending:     map[int64]uint64{},
				pmsgs:       map[int64]int32{},
				counts:      map[int64]int32{},
				consumers:   map[uint64]ConsumerSpec{},
				joinSeq:     map[uint64]int{},
			},
		}
		t.Repeat(map[string]func(*rapid.T){
			"":              s.check,
			"join":          s.join,
			"leave":         s.leave,
			"flow":          s.flow,
			"publish":       s.publish,
			"ack":           s.ack,
			"ackPending":    s.ackPending,
			"ackBatch":      s.ackBatch,
			"ackCumulative": s.ackCumulative,
			"expire":        s.expire,
			"nack":          s.nack,
			"redeliverAll":  s.redeliverAll,
			"dispatch":      s.dispatch,
			"dispatch2":     s.dispatch,
			"dispatchLimit": s.dispatchLimited,
			"tick":          s.tick,
		})
	})
}
