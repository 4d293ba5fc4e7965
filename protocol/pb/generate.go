// Package pb holds the Go types generated from pulsar.proto, pulsarsim's own
// schema of the Pulsar binary protocol.
package pb

//go:generate protoc --go_out=. --go_opt=paths=source_relative pulsar.proto
