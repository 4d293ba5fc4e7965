// Package model holds the plain values every layer of pulsarsim speaks:
// topic names, the policies of namespaces and topics with their defaults
// and range checks, the schema compatibility strategies, and the sentinel
// errors of the exported API with Pulsar's wording. It has no state, no
// locks and no goroutines; the store, the serving broker, the admin API and
// testkit all use these values, and package broker keeps each reachable
// under its old name (broker.Policies is model.Policies).
package model
