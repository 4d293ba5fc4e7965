package testkit

import "github.com/pulsarsim/pulsarsim/broker"

// WithBrokerEntryMetadata makes the broker write broker entry metadata
// (PIP-70) before every entry of a persistent topic, with both of Pulsar's
// interceptors (the broker's publish time and a per-topic index), and send
// it to the clients that announce support, as a Pulsar configured with
// brokerEntryMetadataInterceptors and
// exposingBrokerEntryMetadataToClientEnabled does: pulsar-client-go's
// Message.BrokerPublishTime and Message.Index then return them, and seeks
// by time follow the broker's clock. For other settings use
// WithBroker(broker.WithBrokerEntryMetadata(...)).
func WithBrokerEntryMetadata() Option {
	return WithBroker(broker.WithBrokerEntryMetadata(broker.BrokerEntryMetadata{
		BrokerTimestamp: true, Index: true, ExposeToClients: true}))
}
