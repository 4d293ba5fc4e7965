package broker

// The namespace policies that gate a client's PRODUCER and SUBSCRIBE
// beyond its permissions: encryptionRequired, the subscription permissions
// and the subscription auth mode.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pulsarsim/pulsarsim/model"
	"github.com/pulsarsim/pulsarsim/protocol"
	pb "github.com/pulsarsim/pulsarsim/protocol/pb"
)

// subscriptionAuthRefusal applies a namespace's subscription permissions
// and subscription auth mode to a SUBSCRIBE, as Pulsar's authorization
// provider does before it checks the consume permission: with
// authorization on, a role that is neither a super-user nor an admin of the
// tenant may not use a subscription granted to other roles only
// (Policies.SubscriptionAuthRoles), nor, in Prefix mode, a subscription
// whose name does not start with the role. It returns nil when the
// subscription may be used.
func (c *conn) subscriptionAuthRefusal(tn TopicName, sub string) *refusal {
	if c.b.cfg.authz == nil || strings.TrimSpace(sub) == "" {
		return nil
	}
	role := c.role()
	if c.b.IsSuperUser(role) || c.b.IsTenantAdmin(role, tn.Tenant) {
		return nil
	}
	pol, err := c.b.NamespacePolicies(tn.NamespaceName())
	if err != nil {
		return nil // the consume check answers a missing namespace
	}
	if roles := pol.SubscriptionAuthRoles[sub]; len(roles) > 0 && !slices.Contains(roles, role) {
		return &refusal{pb.ServerError_AuthorizationError, "Client is not authorized to subscribe"}
	}
	if m := pol.SubscriptionAuthMode; m != nil && *m == model.SubscriptionAuthPrefix && !strings.HasPrefix(sub, role) {
		return &refusal{pb.ServerError_AuthorizationError, fmt.Sprintf("org.apache.pulsar.broker.PulsarServerException: "+
			"Failed to create consumer - The subscription name needs to be prefixed by the authentication role, "+
			"like %s-xxxx for topic: %s", role, tn)}
	}
	return nil
}

// encryptionRefusalLocked applies a namespace's encryptionRequired to a
// PRODUCER, as Pulsar does once it has the topic: a producer that does not
// say it encrypts is refused with MetadataError, except on system topics.
func (t *Topic) encryptionRefusalLocked(p *pb.CommandProducer) *pb.BaseCommand {
	req := t.policiesLocked().EncryptionRequired
	if req == nil || !*req || p.GetEncrypted() || t.name.NamespaceName() == systemNamespace ||
		strings.HasPrefix(t.name.Local, "__") {
		return nil
	}
	return protocol.ErrorCommand(p.GetRequestId(), pb.ServerError_MetadataError, "Encryption is required in "+t.name.String())
}
