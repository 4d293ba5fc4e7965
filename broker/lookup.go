package broker

import (
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// handleLookup answers LOOKUP: Connect, authoritative, with the URLs of the
// broker owning the topic's bundle (this one's, or those of the listener the
// lookup names), as a lone broker owns all; in a cluster, a bundle nobody
// owns is assigned first, which may redirect the client (lookupOwner). Like Pulsar, a lookup does not check that the topic exists;
// it checks that the client may produce to or consume from it, and that the
// topic's namespace exists (TopicNotFound "Namespace not found" otherwise).
func (c *conn) handleLookup(l *pb.CommandLookupTopic) {
	c.b.lookups.Add(1)
	reqID := l.GetRequestId()
	tn, err := ParseTopicName(l.GetTopic())
	if err != nil {
		c.send(lookupFailed(reqID, pb.ServerError_InvalidTopicName, err.Error()))
		return
	}
	if c.tenantMissing(tn) {
		c.send(lookupFailed(reqID, pb.ServerError_AuthorizationError, "Exception occurred while trying to authorize lookup"))
		return
	}
	if !c.allowed(tn, auth.OpLookup) {
		c.send(lookupFailed(reqID, pb.ServerError_AuthorizationError, "Client is not authorized to Lookup"))
		return
	}
	if !c.b.namespaceReady(tn.NamespaceName()) {
		c.send(lookupFailed(reqID, pb.ServerError_TopicNotFound, errNoNamespace.Error()))
		return
	}
	if msg, ok := c.b.missingLocalCluster(tn); ok { // geo.go
		c.send(lookupFailed(reqID, pb.ServerError_MetadataError, msg))
		return
	}
	a := c.b.lookupOwner(tn, l.GetAuthoritative())
	if a.failed {
		c.send(lookupFailed(reqID, pb.ServerError_ServiceNotReady, a.msg))
		return
	}
	url, tlsURL := a.url, a.tlsURL
	if a.self {
		var err error
		if url, tlsURL, err = c.b.LookupURLs(l.GetAdvertisedListenerName()); err != nil {
			c.send(lookupFailed(reqID, pb.ServerError_ServiceNotReady, err.Error()))
			return
		}
	}
	answer := pb.CommandLookupTopicResponse_Redirect
	if a.connect {
		answer = pb.CommandLookupTopicResponse_Connect
	}
	resp := &pb.CommandLookupTopicResponse{
		RequestId:              proto.Uint64(reqID),
		Response:               answer.Enum(),
		BrokerServiceUrl:       proto.String(url),
		Authoritative:          proto.Bool(a.authoritative),
		ProxyThroughServiceUrl: proto.Bool(false),
	}
	if tlsURL != "" {
		resp.BrokerServiceUrlTls = proto.String(tlsURL)
	}
	c.send(protocol.Base(pb.BaseCommand_LOOKUP_RESPONSE, resp))
}

// handlePartitionedMetadata answers PARTITIONED_METADATA: N for a partitioned
// topic, 0 for any other topic, and TopicNotFound (with an empty message, as
// Pulsar sends) for a missing topic when auto-creation is off, either
// broker-wide (or for the namespace) or in the request. A missing topic
// that the policy in force creates partitioned is created here, with the
// default count (autotopiccreation.go). With authorization on, a topic of a tenant
// that does not exist is TopicNotFound for any role but a super-user's.
func (c *conn) handlePartitionedMetadata(m *pb.CommandPartitionedTopicMetadata) {
	resp := &pb.CommandPartitionedTopicMetadataResponse{RequestId: proto.Uint64(m.GetRequestId())}
	tn, err := ParseTopicName(m.GetTopic())
	var n int
	switch {
	case err != nil:
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Failed.Enum()
		resp.Error = pb.ServerError_InvalidTopicName.Enum()
		resp.Message = proto.String(err.Error())
	case c.tenantMissing(tn):
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Failed.Enum()
		resp.Error = pb.ServerError_TopicNotFound.Enum()
		resp.Message = proto.String("Tenant or namespace or topic does not exist: " + tn.NamespaceName())
	case !c.allowed(tn, auth.OpLookup):
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Failed.Enum()
		resp.Error = pb.ServerError_AuthorizationError.Enum()
		resp.Message = proto.String("Client is not authorized to Get Partition Metadata")
	case c.b.namespaceReady(tn.NamespaceName()) && c.b.refusesForeign(tn): // geo.go
		msg, _ := c.b.missingLocalCluster(tn)
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Failed.Enum()
		resp.Error = pb.ServerError_MetadataError.Enum()
		resp.Message = proto.String(msg)
	default:
		if n, err = c.b.partitionedMetadata(tn, m.GetMetadataAutoCreationEnabled(), true); err != nil {
			resp.Response = pb.CommandPartitionedTopicMetadataResponse_Failed.Enum()
			resp.Error = pb.ServerError_TopicNotFound.Enum()
			resp.Message = proto.String("")
			if errors.Is(err, errNoNamespace) {
				resp.Message = proto.String(err.Error())
			}
			break
		}
		resp.Response = pb.CommandPartitionedTopicMetadataResponse_Success.Enum()
		resp.Partitions = proto.Uint32(uint32(n))
	}
	c.send(protocol.Base(pb.BaseCommand_PARTITIONED_METADATA_RESPONSE, resp))
}
