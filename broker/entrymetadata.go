package broker

import (
	"fmt"
	"strings"
	"time"

	"github.com/pulsarsim/pulsarsim/protocol"
)

// Broker entry metadata (PIP-70): with entry metadata interceptors
// configured, the broker writes a small block before every entry it stores
// on a persistent topic, [0x0e02][size][BrokerEntryMetadata], holding its
// own time at publish (AppendBrokerTimestampMetadataInterceptor) and the
// topic-wide index of the entry's last message
// (AppendIndexMetadataInterceptor), counted in messages from 0. Pulsar's
// managed ledger writes it, so a non-persistent topic's messages carry
// none. The block is part of the stored entry, so sizes in stats count it,
// as Pulsar's do. A consumer receives it only when its CONNECT announced
// supports_broker_entry_metadata with protocol version 18 or later and the
// broker exposes the metadata to clients
// (exposingBrokerEntryMetadataToClientEnabled); the others get the entry
// without it. Where Pulsar reads an entry's time (seek and expiry by time,
// backlog age, the earliest publish time in stats), a broker timestamp
// stands in for the producer's publish time.

// The entry metadata interceptors, by the class names Pulsar's
// brokerEntryMetadataInterceptors setting takes.
const (
	BrokerTimestampInterceptor = "org.apache.pulsar.common.intercept.AppendBrokerTimestampMetadataInterceptor"
	IndexInterceptor           = "org.apache.pulsar.common.intercept.AppendIndexMetadataInterceptor"
)

// BrokerEntryMetadata says what the broker writes before each entry, and
// whether clients receive it.
type BrokerEntryMetadata struct {
	// BrokerTimestamp writes the broker clock's time at publish
	// (AppendBrokerTimestampMetadataInterceptor).
	BrokerTimestamp bool
	// Index writes the topic-wide index of the entry's last message
	// (AppendIndexMetadataInterceptor).
	Index bool
	// ExposeToClients sends the metadata to consumers that announce
	// support for it (exposingBrokerEntryMetadataToClientEnabled).
	ExposeToClients bool
}

// WithBrokerEntryMetadata sets the broker entry metadata written before
// each entry (brokerEntryMetadataInterceptors) and whether clients receive
// it (exposingBrokerEntryMetadataToClientEnabled). Default: none, as in
// Pulsar.
func WithBrokerEntryMetadata(m BrokerEntryMetadata) Option {
	return func(c *config) { c.entryMeta = m }
}

// ParseBrokerEntryMetadataInterceptors reads a brokerEntryMetadataInterceptors
// value: Pulsar class names, comma-separated. An unknown class fails, as it
// stops a Pulsar broker from starting.
func ParseBrokerEntryMetadataInterceptors(list string) (timestamp, index bool, err error) {
	for _, name := range strings.Split(list, ",") {
		switch name = strings.TrimSpace(name); name {
		case "":
		case BrokerTimestampInterceptor:
			timestamp = true
		case IndexInterceptor:
			index = true
		default:
			return false, false, fmt.Errorf("brokerEntryMetadataInterceptors: unknown interceptor %q (known: %s, %s)",
				name, BrokerTimestampInterceptor, IndexInterceptor)
		}
	}
	return timestamp, index, nil
}

// writesEntryMetadata says the broker writes broker entry metadata.
func (c *config) writesEntryMetadata() bool { return c.entryMeta.BrokerTimestamp || c.entryMeta.Index }

// addEntryMetadataLocked puts the broker entry metadata before e, about to
// be stored as the topic's next entry: the broker's time, which becomes the
// entry's time, and the index of its last message.
func (t *Topic) addEntryMetadataLocked(e *entry) {
	var m protocol.BrokerEntryMetadata
	if t.b.cfg.entryMeta.BrokerTimestamp {
		now := uint64(t.b.nowMillis())
		m.BrokerTimestamp, m.HasTimestamp = now, true
		e.PublishTime = now
	}
	if t.b.cfg.entryMeta.Index {
		t.messagesIndexed += int64(e.Messages)
		m.Index, m.HasIndex = uint64(t.messagesIndexed-1), true
	}
	data := protocol.AppendBrokerEntryMetadata(make([]byte, 0, 32+len(e.Data)), m)
	e.MetaLen = uint8(len(data))
	e.Data = append(data, e.Data...)
}

// takeEntryMetadata records whether the connection's consumers receive
// broker entry metadata, from its CONNECT.
func (c *conn) takeEntryMetadata(version int32, announced bool) {
	c.entryMetadata.Store(version >= 18 && announced && c.b.cfg.entryMeta.ExposeToClients)
}

// entryBytes returns what a MESSAGE to this connection carries of e: the
// stored entry, less its broker entry metadata unless the client takes it.
func (c *conn) entryBytes(e *entry) []byte {
	if e.MetaLen == 0 || c.entryMetadata.Load() {
		return e.Data
	}
	return e.Data[e.MetaLen:]
}

// entryMetadataOf returns the broker timestamp (zero for none) and the
// index (-1 for none) of the last message of a stored entry.
func entryMetadataOf(data []byte) (time.Time, int64) {
	m, ok, err := protocol.ParseBrokerEntryMetadata(data)
	if !ok || err != nil {
		return time.Time{}, -1
	}
	var at time.Time
	if m.HasTimestamp {
		at = time.UnixMilli(int64(m.BrokerTimestamp))
	}
	index := int64(-1)
	if m.HasIndex {
		index = int64(m.Index)
	}
	return at, index
}

// setEntryMetadata gives the messages of a stored entry their broker
// timestamp and index, from the entry's broker entry metadata.
func setEntryMetadata(msgs []Message, data []byte) {
	at, last := entryMetadataOf(data)
	for i := range msgs {
		msgs[i].BrokerPublishTime = at
		msgs[i].Index = -1
		if last >= 0 {
			msgs[i].Index = last - int64(len(msgs)) + int64(i) + 1
		}
	}
}
