package broker

import (
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// handleLookup answers LOOKUP: this broker owns every topic, so the answer is
// always Connect, authoritative, with its own URL. Like Pulsar, a lookup does
// not check that the topic exists.
func (c *conn) handleLookup(l *pb.CommandLookupTopic) {
	resp := &pb.CommandLookupTopicResponse{RequestId: proto.Uint64(l.GetRequestId())}
	if _, err := ParseTopicName(l.GetTopic()); err != nil {
		resp.Response = pb.CommandLookupTopicResponse_Failed.Enum()
		resp.Error = pb.ServerError_InvalidTopicName.Enum()
		resp.Message = proto.String(err.Error())
	} else {
		resp.Response = pb.CommandLookupTopicResponse_Connect.Enum()
		resp.BrokerServiceUrl = proto.String(c.b.URL())
		resp.Authoritative = proto.Bool(true)
		resp.ProxyThroughServiceUrl = proto.Bool(false)
	}
	c.send(protocol.Base(pb.BaseCommand_LOOKUP_RESPONSE, resp))
}

// handlePartitionedMetadata answers PARTITIONED_METADATA: N for a partitioned
// topic, 0 for any other topic, and TopicNotFound (with an empty message, as
// Pulsar sends) for a missing topic when auto-creation is off, either
// broker-wide or in the request.
func (c *conn) handlePartitionedMetadata(m *pb.CommandPartitionedTopicMetadata) {
	resp := &pb.CommandPartitionedTopicMetadataResponse{RequestId: proto.Uint64(m.GetRequestId())}
	tn, err := ParseTopicName(m.GetTopic())
	switch {
	case err != nil:
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Failed.Enum()
		resp.Error = pb.ServerError_InvalidTopicName.Enum()
		resp.Message = proto.String(err.Error())
	case !c.b.topicExists(tn) && (!c.b.cfg.autoCreateTopics || !m.GetMetadataAutoCreationEnabled()):
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Failed.Enum()
		resp.Error = pb.ServerError_TopicNotFound.Enum()
		resp.Message = proto.String("")
	default:
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Success.Enum()
		resp.Partitions = proto.Uint32(uint32(c.b.partitions(tn)))
	}
	c.send(protocol.Base(pb.BaseCommand_PARTITIONED_METADATA_RESPONSE, resp))
}
