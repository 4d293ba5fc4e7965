//go:build race

package broker_test

// raceDetector is set when the tests run under the race detector.
// pulsar-client-go v0.19.0's producer writes its connection state on its
// reconnection goroutine while its send loop reads it, unsynchronised, so a
// test that sends on a producer after the producer reconnected (a topic
// moved, a broker restarted) is reported as a data race in the client. Such
// tests make a new producer under the race detector; .ci/run also runs them
// without it, reusing the producer.
const raceDetector = true
