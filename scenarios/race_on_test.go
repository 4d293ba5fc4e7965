//go:build race

package scenarios_test

// raceDetector is set when the tests run under the race detector.
// pulsar-client-go v0.19.0's producer writes its connection state on its
// reconnection goroutine while its send loop reads it, unsynchronised, so a
// test that sends on a producer after the producer reconnected (a topic
// moved, a broker restarted) is reported as a data race in the client, and
// so is its dead-letter producer created while a connection closes. Under
// the race detector the cluster property check gives its consumer no
// dead-letter policy; .ci/run also runs it without the detector, with one.
const raceDetector = true
