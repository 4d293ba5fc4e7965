package broker

import (
	"github.com/pulsarsim/pulsarsim/bundles"
)

// DefaultBundles is the number of bundles a namespace is split into when it
// is created, Pulsar's defaultNumberOfNamespaceBundles.
const DefaultBundles = bundles.DefaultCount

// DefaultOwnershipTimeout is how long the bundles of a broker that crashed
// stay owned by it before the other brokers may take them over: Pulsar's
// metadataStoreSessionTimeoutMillis.
const DefaultOwnershipTimeout = bundles.DefaultOwnershipTimeout

// Bundle is one namespace bundle: the topics of Namespace whose name hashes
// into [Lower, Upper) (package bundles keeps who owns it).
type Bundle = bundles.Bundle
