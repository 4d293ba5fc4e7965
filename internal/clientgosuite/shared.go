package main

import "sync"

// sharedState names the broker state that some tests of the suite change
// and restore for everyone: tests sharing a name run one at a time, as the
// suite's own CI runs every test (one after another). Run together, one
// test's change or restore lands in the middle of the other.
var sharedState = map[string]string{
	// Both POST and then DELETE public/default's backlog quota.
	"TestSendTimeout":        "public/default backlog quota",
	"TestSendContextExpired": "public/default backlog quota",
	// Both run the container named pulsar-test on host ports 6659 and 8089
	// (Testcontainers' Reuse: the second finds the first's), and each
	// terminates it at its end.
	"TestReconnectConsumer":            "the pulsar-test container",
	"TestReconnectedBrokerSendPermits": "the pulsar-test container",
}

// stateLocks serializes the tests of each sharedState name.
type stateLocks struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// hold waits until no other test sharing the state of test runs, and
// returns the function that lets the next one run.
func (s *stateLocks) hold(test string) (release func()) {
	state, ok := sharedState[test]
	if !ok {
		return func() {}
	}
	s.mu.Lock()
	if s.locks == nil {
		s.locks = map[string]*sync.Mutex{}
	}
	l := s.locks[state]
	if l == nil {
		l = &sync.Mutex{}
		s.locks[state] = l
	}
	s.mu.Unlock()
	l.Lock()
	return l.Unlock
}
