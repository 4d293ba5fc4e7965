package broker

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Message is one stored message as a plain value: a batch entry gives one
// Message per batch index.
type Message struct {
	ID            MessageID
	Producer      string
	SequenceID    uint64
	Key           string
	OrderingKey   []byte
	Properties    map[string]string
	EventTime     time.Time // zero when the producer set none
	PublishTime   time.Time
	DeliverAt     time.Time // zero unless delayed
	Payload       []byte
	Compression   string // codec the producer used: "NONE", "LZ4", "ZSTD"…
	BatchSize     int32  // messages in the entry; 0 when not batched
	SchemaVersion []byte
	// Txn is the transaction that produced the message, nil for none.
	Txn *TxnID
	// BrokerPublishTime is the broker's time at publish, from the broker
	// entry metadata; zero unless the broker writes it
	// (WithBrokerEntryMetadata).
	BrokerPublishTime time.Time
	// Index is the message's topic-wide index, from the broker entry
	// metadata; -1 unless the broker writes it.
	Index int64
	// ReplicatedFrom is the cluster a replicator copied the message from,
	// "" for a message produced on its cluster; ReplicateTo the clusters
	// its producer restricted its replication to, nil for none.
	ReplicatedFrom string
	ReplicateTo    []string
}

// openEntry parses a stored entry's metadata and decompresses its body, of
// at most limit bytes.
func openEntry(data []byte, limit int) (*pb.MessageMetadata, []byte, error) {
	pl, err := protocol.ParsePayload(data)
	if err != nil {
		return nil, nil, err
	}
	md := pl.Metadata
	body, err := decompress(md.GetCompression(), pl.Body, int(md.GetUncompressedSize()), limit)
	if err != nil {
		return nil, nil, err
	}
	return md, body, nil
}

// decodeEntry expands a stored entry into its messages, decompressing the
// payload as needed; limit bounds the size of a decompressed payload.
func decodeEntry(data []byte, id MessageID, limit int) ([]Message, error) {
	md, body, err := openEntry(data, limit)
	if err != nil {
		return nil, err
	}
	msgs, err := entryMessages(md, body, id)
	if err == nil {
		setEntryMetadata(msgs, data)
	}
	return msgs, err
}

// entryMessages expands an entry's metadata and uncompressed body into its
// messages.
func entryMessages(md *pb.MessageMetadata, body []byte, id MessageID) ([]Message, error) {
	base := Message{
		Producer:      md.GetProducerName(),
		SequenceID:    md.GetSequenceId(),
		PublishTime:   time.UnixMilli(int64(md.GetPublishTime())),
		Compression:   md.GetCompression().String(),
		SchemaVersion: md.GetSchemaVersion(),
		Index:         -1,

		ReplicatedFrom: md.GetReplicatedFrom(),
		ReplicateTo:    md.GetReplicateTo(),
	}
	if md.DeliverAtTime != nil {
		base.DeliverAt = time.UnixMilli(md.GetDeliverAtTime())
	}
	if md.NumMessagesInBatch == nil {
		m := base
		m.ID = id
		m.Key = md.GetPartitionKey()
		m.OrderingKey = md.GetOrderingKey()
		m.Properties = properties(md.GetProperties())
		if md.GetEventTime() != 0 {
			m.EventTime = time.UnixMilli(int64(md.GetEventTime()))
		}
		m.Payload = bytes.Clone(body)
		return []Message{m}, nil
	}
	singles, err := protocol.SplitBatch(body, int(md.GetNumMessagesInBatch()))
	if err != nil {
		return nil, err
	}
	out := make([]Message, len(singles))
	for i, s := range singles {
		m := base
		m.ID = id
		m.ID.BatchIndex = int32(i)
		m.BatchSize = md.GetNumMessagesInBatch()
		m.SequenceID = s.Metadata.GetSequenceId()
		if s.Metadata.SequenceId == nil {
			m.SequenceID = md.GetSequenceId() + uint64(i)
		}
		m.Key = s.Metadata.GetPartitionKey()
		m.OrderingKey = s.Metadata.GetOrderingKey()
		m.Properties = properties(s.Metadata.GetProperties())
		if s.Metadata.GetEventTime() != 0 {
			m.EventTime = time.UnixMilli(int64(s.Metadata.GetEventTime()))
		}
		m.Payload = bytes.Clone(s.Payload)
		out[i] = m
	}
	return out, nil
}

// zstdDecoder returns the decoder of ZSTD payloads, built on first use. An
// error building it is returned by every ZSTD decompression. Its memory
// bound backs the size check of decompress.
var zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(256<<20))
})

// decompress undoes the producer's compression of a payload whose metadata
// claims size bytes once uncompressed. Both come from the producer: like
// Pulsar's Java consumer, it takes a claimed size beyond limit (the
// broker's maxMessageSize) for a corrupt message instead of allocating it,
// and it never produces more than the claimed size.
func decompress(codec pb.CompressionType, b []byte, size, limit int) ([]byte, error) {
	if codec == pb.CompressionType_NONE {
		return b, nil
	}
	if size < 0 || size > limit {
		return nil, fmt.Errorf("uncompressed size %d beyond the maximum message size %d", size, limit)
	}
	var out []byte
	var err error
	switch codec {
	case pb.CompressionType_LZ4:
		out = make([]byte, size)
		var n int
		n, err = lz4.UncompressBlock(b, out)
		out = out[:max(n, 0)]
	case pb.CompressionType_ZLIB:
		var r io.ReadCloser
		if r, err = zlib.NewReader(bytes.NewReader(b)); err == nil {
			out, err = io.ReadAll(io.LimitReader(r, int64(size)+1))
			r.Close()
		}
	case pb.CompressionType_ZSTD:
		var d *zstd.Decoder
		if d, err = zstdDecoder(); err == nil {
			out, err = d.DecodeAll(b, make([]byte, 0, size))
		}
	case pb.CompressionType_SNAPPY:
		var n int
		if n, err = snappy.DecodedLen(b); err == nil {
			if n > size {
				return nil, fmt.Errorf("snappy: %d bytes, more than the %d claimed", n, size)
			}
			out, err = snappy.Decode(make([]byte, n), b)
		}
	default:
		return nil, fmt.Errorf("unknown compression %v", codec)
	}
	if err != nil {
		return nil, fmt.Errorf("%v: %w", codec, err)
	}
	if len(out) > size {
		return nil, fmt.Errorf("%v: more than the %d bytes claimed", codec, size)
	}
	return out, nil
}

// Messages returns the stored messages of a topic, oldest first, with batches
// expanded. It returns nil for a topic that does not exist. Entries freed
// because every subscription acknowledged them (see DefaultTrimBlock) are no
// longer stored; the others keep their ids.
func (b *Broker) Messages(topic string) ([]Message, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return nil, err
	}
	t := b.lookupTopic(tn.String())
	if t == nil {
		return nil, nil
	}
	t.mu.Lock()
	type stored struct {
		data []byte
		id   MessageID
		txn  *TxnID
	}
	entries := make([]stored, 0, len(t.log.Entries))
	for i, e := range t.log.Entries {
		if e.Marker {
			continue // a transaction's marker holds no message
		}
		s := stored{data: e.Data, id: t.eventID(t.log.Base + int64(i))}
		if e.InTxn {
			id := e.Txn
			s.txn = &id
		}
		entries = append(entries, s)
	}
	t.mu.Unlock()
	var out []Message
	for _, e := range entries {
		ms, err := decodeEntry(e.data, e.id, b.cfg.maxMessageSize)
		if err != nil {
			return out, fmt.Errorf("entry %d:%d: %w", e.id.Ledger, e.id.Entry, err)
		}
		for i := range ms {
			ms[i].Txn = e.txn
		}
		out = append(out, ms...)
	}
	return out, nil
}

// Entry is one stored entry as a plain value: what one SEND stored.
type Entry struct {
	// ID is the entry's id; its BatchIndex is -1.
	ID          MessageID
	Producer    string
	SequenceID  uint64
	PublishTime time.Time
	// BatchSize is the number of messages of a batch entry; 0 when the entry
	// is not a batch.
	BatchSize int32
	// Messages are the entry's messages, batches expanded, as Messages
	// returns them.
	Messages []Message
	// Body is the entry's payload uncompressed: the message's payload, or a
	// batch's messages each framed with its own metadata (as Pulsar's REST
	// API serves an entry).
	Body []byte
	// Key, Properties and EventTime are the entry's own metadata: a single
	// message's, or what the producer put on a whole batch (pulsar-client-go
	// puts its first message's key and properties there). EventTime is zero
	// when unset.
	Key        string
	Properties map[string]string
	EventTime  time.Time
	// UncompressedSize is the metadata's uncompressed_size, -1 when it has
	// none.
	UncompressedSize int64
	// Encrypted says the producer encrypted the payload (the metadata names
	// an encryption algorithm or parameter).
	Encrypted bool
	// FrameSize is the stored entry's size less its metadata's: the payload
	// with the checksum and metadata-size fields before it (what Pulsar's
	// REST API reports as a batch's X-Pulsar-batch-size).
	FrameSize int
	// BrokerTimestamp is the broker's time at publish and Index the index
	// of the entry's last message, from the broker entry metadata: zero
	// and -1 unless the broker writes them (WithBrokerEntryMetadata).
	BrokerTimestamp time.Time
	Index           int64
	// DeliverAt is the entry's deliver-at time, zero for none;
	// ReplicateTo its replication clusters; Compression the codec its
	// metadata names, "" when it names none; KeyBase64 whether its
	// partition key is base64, nil when the metadata does not say.
	DeliverAt   time.Time
	ReplicateTo []string
	Compression string
	KeyBase64   *bool
}

// Entry returns the stored entry of a topic with this id (its batch index is
// ignored). It fails with ErrTopicNotFound or ErrMessageNotFound, the latter
// also for an entry already freed (see DefaultTrimBlock).
func (b *Broker) Entry(topic string, id MessageID) (Entry, error) {
	tn, err := ParseTopicName(topic)
	if err != nil {
		return Entry{}, err
	}
	t := b.lookupTopic(tn.String())
	if t == nil {
		return Entry{}, topicNotFound(tn)
	}
	t.mu.Lock()
	var data []byte
	if id.Ledger == int64(t.ledger) {
		if e := t.log.Get(id.Entry); e != nil {
			data = e.Data
		}
	}
	eid := t.eventID(id.Entry)
	t.mu.Unlock()
	if data == nil {
		return Entry{}, ErrMessageNotFound
	}
	return b.openStored(data, eid)
}

// openStored decodes a stored entry's bytes into an Entry with id eid.
func (b *Broker) openStored(data []byte, eid MessageID) (Entry, error) {
	md, body, err := openEntry(data, b.cfg.maxMessageSize)
	if err != nil {
		return Entry{}, fmt.Errorf("entry %d:%d: %w", eid.Ledger, eid.Entry, err)
	}
	msgs, err := entryMessages(md, body, eid)
	if err != nil {
		return Entry{}, fmt.Errorf("entry %d:%d: %w", eid.Ledger, eid.Entry, err)
	}
	setEntryMetadata(msgs, data)
	e := Entry{ID: eid, Producer: md.GetProducerName(), SequenceID: md.GetSequenceId(),
		PublishTime: time.UnixMilli(int64(md.GetPublishTime())), Messages: msgs, Body: bytes.Clone(body),
		Key: md.GetPartitionKey(), Properties: map[string]string{}, UncompressedSize: -1,
		Encrypted: md.EncryptionAlgo != nil || md.EncryptionParam != nil}
	for _, kv := range md.GetProperties() {
		e.Properties[kv.GetKey()] = kv.GetValue()
	}
	if md.EventTime != nil && md.GetEventTime() != 0 {
		e.EventTime = time.UnixMilli(int64(md.GetEventTime()))
	}
	if md.UncompressedSize != nil {
		e.UncompressedSize = int64(md.GetUncompressedSize())
	}
	if pl, err := protocol.ParsePayload(data); err == nil {
		e.FrameSize = 4 + len(pl.Body)
		if pl.HasChecksum {
			e.FrameSize += 6
		}
	}
	if md.NumMessagesInBatch != nil {
		e.BatchSize = md.GetNumMessagesInBatch()
	}
	e.BrokerTimestamp, e.Index = entryMetadataOf(data)
	if md.DeliverAtTime != nil {
		e.DeliverAt = time.UnixMilli(md.GetDeliverAtTime())
	}
	e.ReplicateTo = slices.Clone(md.GetReplicateTo())
	if md.Compression != nil {
		e.Compression = md.GetCompression().String()
	}
	if md.PartitionKeyB64Encoded != nil {
		b64 := md.GetPartitionKeyB64Encoded()
		e.KeyBase64 = &b64
	}
	return e, nil
}
