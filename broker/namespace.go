package broker

import (
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// handleGetTopicsOfNamespace lists a namespace's topics (each partition of a
// partitioned topic separately), filtered by the request's pattern. An
// invalid namespace closes the connection, as in Pulsar.
func (c *conn) handleGetTopicsOfNamespace(g *pb.CommandGetTopicsOfNamespace) bool {
	ns := g.GetNamespace()
	if ValidateNamespaceName(ns) != nil {
		c.log.Info("closing connection: invalid namespace", "namespace", ns)
		return false
	}
	if !c.b.AllowedNamespace(c.role(), ns) {
		c.send(protocol.ErrorCommand(g.GetRequestId(), pb.ServerError_AuthorizationError,
			"Client is not authorized to GetTopicsOfNamespace"))
		return true
	}
	topics := c.b.TopicsOfNamespace(ns, g.GetMode())
	// Pulsar says whether it filtered the list every time.
	resp := &pb.CommandGetTopicsOfNamespaceResponse{RequestId: proto.Uint64(g.GetRequestId()), Filtered: proto.Bool(false)}
	if p := g.GetTopicsPattern(); p != "" {
		if _, after, found := strings.Cut(p, "://"); found {
			p = after
		}
		re, err := regexp.Compile("^(?:" + p + ")$")
		if err == nil {
			kept := topics[:0]
			for _, tp := range topics {
				_, local, _ := strings.Cut(tp, "://")
				if re.MatchString(local) {
					kept = append(kept, tp)
				}
			}
			topics = kept
		}
		resp.Filtered = proto.Bool(true)
	}
	hash := topicsHash(topics)
	resp.TopicsHash = proto.String(hash)
	if g.GetTopicsHash() == hash {
		resp.Changed = proto.Bool(false)
	} else {
		resp.Changed = proto.Bool(true)
		resp.Topics = topics
	}
	c.send(protocol.Base(pb.BaseCommand_GET_TOPICS_OF_NAMESPACE_RESPONSE, resp))
	return true
}

// TopicsMode selects the topics a listing includes: persistent ones,
// non-persistent ones or all (the binary protocol's mode).
type TopicsMode = pb.CommandGetTopicsOfNamespace_Mode

// The modes of a topic listing.
const (
	TopicsPersistent    = pb.CommandGetTopicsOfNamespace_PERSISTENT
	TopicsNonPersistent = pb.CommandGetTopicsOfNamespace_NON_PERSISTENT
	TopicsAll           = pb.CommandGetTopicsOfNamespace_ALL
)

// TopicsOfNamespace returns the sorted full names of the topics in the
// namespace "tenant/ns" for the given mode: persistent, non-persistent or all.
// A partitioned topic appears as its partitions, those that exist: as on
// Pulsar, whose listing comes from the topics' managed ledgers, a partition
// deleted for inactivity is not listed until it is used again.
func (b *Broker) TopicsOfNamespace(ns string, mode TopicsMode) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []string{}
	for _, full := range b.topicNamesLocked() {
		if tn, err := ParseTopicName(full); err == nil && tn.NamespaceName() == ns && modeWants(mode, tn) {
			out = append(out, full)
		}
	}
	return out
}

// topicsHash is Pulsar's topic-list hash: the CRC32C of the sorted names
// joined with ",", written as the hex of its little-endian bytes.
func topicsHash(topics []string) string {
	sorted := append([]string(nil), topics...)
	sort.Strings(sorted)
	sum := protocol.Checksum([]byte(strings.Join(sorted, ",")))
	return hex.EncodeToString(binary.LittleEndian.AppendUint32(nil, sum))
}
