// Package websocket is Pulsar's WebSocket API as Pulsar 4.0's websocket
// service serves it on a standalone's web port: producers at
// /ws/v2/producer/{domain}/{tenant}/{ns}/{topic}, consumers at
// /ws/v2/consumer/{domain}/{tenant}/{ns}/{topic}/{subscription} and readers
// at /ws/v2/reader/{domain}/{tenant}/{ns}/{topic}, with their query
// parameters, JSON frames, settlement, encryption and HTTP refusals. (The
// v1 forms with a cluster, /ws/producer/persistent/{tenant}/{cluster}/...,
// are parsed and refused: the broker serves no v1 topic names.)
//
// Like Pulsar's, the service is a client of its broker: each WebSocket
// producer, consumer or reader is one of an internal pulsar-client-go client
// speaking the binary protocol to the broker's own listener, so that what a
// WebSocket client does goes through the broker's real dispatcher, cursors
// and policies. pulsar-client-go was chosen over a client of our own
// because it already does what the Java client does for Pulsar's service
// (batching, compression, chunks, reconnection after an unload); what the
// Java client adds that it lacks (the ack timeout, the negative-ack delay
// with its 100 ms floor, the dead-letter policy's timing) the consumer
// session does itself, in consumer.go.
//
// The WebSocket framing (RFC 6455, server side) is the package's own, in
// frame.go. Serve a Server beside the admin API (admin.WithHandler with
// Routes), whose authentication filter then runs first, as Pulsar's web
// service filter does; the server checks each client's role itself.
package websocket
