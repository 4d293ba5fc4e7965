package durable

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/model"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
	"github.com/pulsarsim/pulsarsim/store"
)

// The database's buckets. Topics are keyed by their canonical name; the
// entries and cursors of a topic live in a bucket of its own under entries
// and cursors.
var (
	bucketMeta    = []byte("meta")    // "store": the metadata (metaRecord)
	bucketLedgers = []byte("ledgers") // topic: ledgerRecord
	bucketLogs    = []byte("logs")    // topic: logRecord, what was freed
	bucketEntries = []byte("entries") // topic / entry id (8 bytes, big endian): entry
	bucketCursors = []byte("cursors") // topic / subscription: cursorRecord
	bucketRecords = []byte("records") // name: a record of the broker's own (PutRecord)
	keyStore      = []byte("store")
	keySecurity   = []byte("security") // in meta: the securityRecord
)

func createBuckets(tx *bolt.Tx) error {
	for _, b := range [][]byte{bucketMeta, bucketLedgers, bucketLogs, bucketEntries, bucketCursors, bucketRecords} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return err
		}
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errChecksum is a record whose checksum does not match its bytes.
var errChecksum = errors.New("durable: checksum mismatch")

// seal prefixes body with its CRC-32C.
func seal(body []byte) []byte {
	out := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(out, crc32.Checksum(body, castagnoli))
	return append(out, body...)
}

// unseal checks a sealed record and returns its body.
func unseal(v []byte) ([]byte, error) {
	if len(v) < 4 || binary.BigEndian.Uint32(v) != crc32.Checksum(v[4:], castagnoli) {
		return nil, errChecksum
	}
	return v[4:], nil
}

// Entry flags.
const (
	flagBatched = 1 << iota
	flagInTxn
	flagTxnMeta
	flagMarker
)

// entryVersion opens every entry record.
const entryVersion = 1

// encodeEntry encodes e as a sealed record: a fixed header, the sticky key,
// then the entry's bytes.
func encodeEntry(e *store.Entry) []byte {
	var flags byte
	if e.Batched {
		flags |= flagBatched
	}
	if e.InTxn {
		flags |= flagInTxn
	}
	if e.TxnMeta {
		flags |= flagTxnMeta
	}
	if e.Marker {
		flags |= flagMarker
	}
	body := make([]byte, 0, 48+len(e.Key)+len(e.Data))
	body = append(body, entryVersion, flags, e.MetaLen)
	body = binary.BigEndian.AppendUint32(body, uint32(e.Messages))
	body = binary.BigEndian.AppendUint64(body, e.PublishTime)
	body = binary.BigEndian.AppendUint64(body, uint64(e.DeliverAt))
	body = binary.BigEndian.AppendUint64(body, e.Txn.Most)
	body = binary.BigEndian.AppendUint64(body, e.Txn.Least)
	body = binary.AppendUvarint(body, uint64(len(e.Key)))
	body = append(body, e.Key...)
	body = append(body, e.Data...)
	return seal(body)
}

// errEntry is an entry record that does not decode.
var errEntry = errors.New("durable: malformed entry record")

// decodeEntry decodes a sealed entry record; v is copied.
func decodeEntry(v []byte) (*store.Entry, error) {
	b, err := unseal(v)
	if err != nil {
		return nil, err
	}
	const fixed = 3 + 4 + 8*4
	if len(b) < fixed || b[0] != entryVersion {
		return nil, errEntry
	}
	flags := b[1]
	e := &store.Entry{
		MetaLen:     b[2],
		Messages:    int32(binary.BigEndian.Uint32(b[3:])),
		PublishTime: binary.BigEndian.Uint64(b[7:]),
		DeliverAt:   int64(binary.BigEndian.Uint64(b[15:])),
		Batched:     flags&flagBatched != 0,
		InTxn:       flags&flagInTxn != 0,
		TxnMeta:     flags&flagTxnMeta != 0,
		Marker:      flags&flagMarker != 0,
	}
	e.Txn.Most = binary.BigEndian.Uint64(b[23:])
	e.Txn.Least = binary.BigEndian.Uint64(b[31:])
	b = b[fixed:]
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, errEntry
	}
	b = b[k:]
	e.Key = append([]byte{}, b[:n]...)
	e.Data = append([]byte(nil), b[n:]...)
	return e, nil
}

// entryKey is the key of entry n in its topic's bucket.
func entryKey(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// ledgerRecord is what a topic writes into its managed ledger's properties
// and side ledgers: written when the topic is created, released or stopped,
// and when its compacted view changes.
type ledgerRecord struct {
	ID         uint64
	Created    time.Time
	Terminated bool                 `json:",omitempty"`
	TopicEpoch uint64               `json:",omitempty"`
	HasEpoch   bool                 `json:",omitempty"`
	DedupLast  map[string]int64     `json:",omitempty"`
	Dedup      bool                 `json:",omitempty"` // deduplication was on: DedupLast is set, if empty
	Properties map[string]string    `json:",omitempty"`
	View       *store.CompactedView `json:",omitempty"`
}

// logRecord says which entries of a topic were freed, with their counters.
type logRecord struct {
	Base          int64
	FreedMessages int64
	FreedBytes    int64
}

// cursorRecord is a durable subscription as its cursor is persisted.
type cursorRecord struct {
	MarkDelete   int64
	Acked        []int64           `json:",omitempty"`
	AckSets      map[int64][]int64 `json:",omitempty"`
	Created      time.Time
	CursorLedger uint64            `json:",omitempty"`
	FromFirst    bool              `json:",omitempty"`
	Properties   map[string]string `json:",omitempty"`
}

func newCursorRecord(s store.DurableSub) cursorRecord {
	r := cursorRecord{
		Created: s.Created, CursorLedger: s.CursorLedger, FromFirst: s.FromFirst, Properties: s.Properties,
	}
	if s.Cursor != nil {
		r.MarkDelete, r.Acked, r.AckSets = s.Cursor.MarkDelete(), s.Cursor.Acked(), s.Cursor.AckSets()
		if len(r.AckSets) == 0 {
			r.AckSets = nil
		}
	}
	return r
}

// metaRecord is the metadata of the store: what Pulsar keeps in its
// metadata store.
type metaRecord struct {
	Partitioned map[string]int
	// PartitionedProperties are the partitioned topics' properties.
	PartitionedProperties map[string]map[string]string `json:",omitempty"`
	Schemas               map[string][]schemaRecord
	NamespacePolicies     map[string]model.Policies
	TopicPolicies         map[string]model.Policies
	Tenants               map[string]bool
	Namespaces            map[string]bool
	NextLedger            uint64
	AntiAffinityGroups    map[string]string
	// LocalPolicies are the namespaces' other local policies.
	LocalPolicies map[string]store.LocalPolicies `json:",omitempty"`
	// NextProducerPrefix is the store's producer-name counter.
	NextProducerPrefix uint64 `json:",omitempty"`
	// Bundles are the namespaces' bundle boundaries (their owners are not
	// kept: a broker that starts takes them anew).
	Bundles map[string][]uint32 `json:",omitempty"`
	// TenantClusters are the clusters each tenant may use.
	TenantClusters map[string][]string `json:",omitempty"`
}

// securityRecord is the authorization state: tenant admin roles and
// permissions (package broker guards it with a lock of its own).
type securityRecord struct {
	TenantAdmins    map[string][]string
	NamespaceGrants map[string]auth.Grants
	TopicGrants     map[string]auth.Grants
}

// EncodeSecurity encodes the authorization state, sealed.
func EncodeSecurity(p *store.Security) []byte {
	return sealJSON(securityRecord{TenantAdmins: p.TenantAdmins, NamespaceGrants: p.NamespaceGrants, TopicGrants: p.TopicGrants})
}

// decodeSecurity writes a sealed security record into p.
func decodeSecurity(v []byte, p *store.Security) error {
	var r securityRecord
	if err := unsealJSON(v, &r); err != nil {
		return err
	}
	p.TenantAdmins, p.NamespaceGrants, p.TopicGrants = r.TenantAdmins, r.NamespaceGrants, r.TopicGrants
	if p.TenantAdmins == nil || p.NamespaceGrants == nil || p.TopicGrants == nil {
		*p = store.Security{}
	}
	return nil
}

// schemaRecord is one version of a topic's schema: its definition as the
// protocol encodes it (nil for a deletion) and when it was registered.
type schemaRecord struct {
	Schema []byte `json:",omitempty"`
	At     time.Time
}

// EncodeMetadata encodes the metadata of st (but its authorization state,
// EncodeSecurity), sealed. Equal metadata encode to equal bytes.
func EncodeMetadata(st *store.Store) ([]byte, error) { return (&MetadataEncoder{}).Encode(st) }

// MetadataEncoder encodes a store's metadata again and again, as its
// changes are written: it keeps the encoding of each schema version, which
// never changes once registered.
type MetadataEncoder struct {
	schemas map[*pb.Schema][]byte
}

// Encode is EncodeMetadata, reusing the schemas encoded before.
func (m *MetadataEncoder) Encode(st *store.Store) ([]byte, error) {
	if m.schemas == nil {
		m.schemas = map[*pb.Schema][]byte{}
	}
	seen := make(map[*pb.Schema]bool, len(m.schemas))
	r := metaRecord{
		Partitioned:           st.Partitioned,
		PartitionedProperties: st.PartitionedProperties,
		Schemas:               map[string][]schemaRecord{},
		NamespacePolicies:     st.NamespacePolicies,
		TopicPolicies:         st.TopicPolicies,
		Tenants:               st.Registry.Tenants,
		Namespaces:            st.Registry.Namespaces,
		NextLedger:            st.NextLedger,
		NextProducerPrefix:    st.NextProducerPrefix,
		AntiAffinityGroups:    st.AntiAffinityGroups,
		LocalPolicies:         st.LocalPolicies,
		TenantClusters:        st.TenantClusters,
	}
	if st.Owners != nil {
		r.Bundles = st.Owners.AllBoundaries()
	}
	for topic, versions := range st.Schemas {
		rs := make([]schemaRecord, len(versions))
		for i, v := range versions {
			rs[i].At = v.At
			if v.Schema != nil {
				b, ok := m.schemas[v.Schema]
				if !ok {
					var err error
					if b, err = proto.Marshal(v.Schema); err != nil {
						return nil, err
					}
					m.schemas[v.Schema] = b
				}
				seen[v.Schema] = true
				rs[i].Schema = b
			}
		}
		r.Schemas[topic] = rs
	}
	for s := range m.schemas {
		if !seen[s] {
			delete(m.schemas, s) // a deleted topic's
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return seal(b), nil
}

// decodeMeta writes a sealed metadata record into st.
func decodeMeta(v []byte, st *store.Store) error {
	b, err := unseal(v)
	if err != nil {
		return err
	}
	var r metaRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	orEmpty(&r.Partitioned)
	orEmpty(&r.PartitionedProperties)
	orEmpty(&r.NamespacePolicies)
	orEmpty(&r.TopicPolicies)
	orEmpty(&r.AntiAffinityGroups)
	orEmpty(&r.LocalPolicies)
	orEmpty(&r.TenantClusters)
	st.Partitioned, st.NamespacePolicies, st.TopicPolicies = r.Partitioned, r.NamespacePolicies, r.TopicPolicies
	st.PartitionedProperties = r.PartitionedProperties
	st.AntiAffinityGroups = r.AntiAffinityGroups
	st.LocalPolicies = r.LocalPolicies
	st.TenantClusters = r.TenantClusters
	st.Registry.Tenants, st.Registry.Namespaces = r.Tenants, r.Namespaces
	if r.NextLedger > st.NextLedger {
		st.NextLedger = r.NextLedger
	}
	st.NextProducerPrefix = max(st.NextProducerPrefix, r.NextProducerPrefix)
	st.Schemas = map[string][]store.Schema{}
	for topic, rs := range r.Schemas {
		versions := make([]store.Schema, len(rs))
		for i, s := range rs {
			versions[i].At = s.At
			if s.Schema != nil {
				versions[i].Schema = &pb.Schema{}
				if err := proto.Unmarshal(s.Schema, versions[i].Schema); err != nil {
					return err
				}
			}
		}
		st.Schemas[topic] = versions
	}
	if st.Owners != nil {
		for ns, bs := range r.Bundles {
			st.Owners.SetBoundaries(ns, bs)
		}
	}
	st.PolicyGen.Add(1)
	return nil
}

// orEmpty makes a nil map empty.
func orEmpty[M ~map[K]V, K comparable, V any](m *M) {
	if *m == nil {
		*m = M{}
	}
}

// sealJSON encodes v as JSON, sealed.
func sealJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("durable: encoding a record: " + err.Error()) // only plain values are encoded
	}
	return seal(b)
}

// unsealJSON decodes a sealed JSON record into v.
func unsealJSON(data []byte, v any) error {
	b, err := unseal(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
