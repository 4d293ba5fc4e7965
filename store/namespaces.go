package store

// Registry holds the tenants and namespaces, starting with those of
// a Pulsar standalone; the others are created through the admin API (or,
// with broker.WithAutoNamespaceCreation, by their first topic). As on Pulsar, a
// topic lives in a namespace that exists: a producer, consumer, lookup or
// admin request on a topic of another namespace is refused.
type Registry struct {
	Tenants    map[string]bool // tenant names
	Namespaces map[string]bool // "tenant/ns"
}
