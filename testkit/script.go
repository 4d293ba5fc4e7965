package testkit

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"
	"pgregory.net/rapid"
)

// GoString names the outcome as Go code, so that rapid prints drawn
// scripts readably.
func (o Outcome) GoString() string {
	switch o {
	case Ack:
		return "testkit.Ack"
	case Nack:
		return "testkit.Nack"
	case NoAnswer:
		return "testkit.NoAnswer"
	case Crash:
		return "testkit.Crash"
	}
	return fmt.Sprintf("testkit.Outcome(%d)", int(o))
}

// MessageIndex returns the index a numbered message carries in its "i"
// property (CheckHandler and scenarios.Target.Produce number the messages
// they publish so), or -1.
func MessageIndex(m pulsar.Message) int {
	i, err := strconv.Atoi(m.Properties()["i"])
	if err != nil {
		return -1
	}
	return i
}

// ScriptTable is a Script as data, which rapid can generate, shrink and
// print: row i lists what happens at the deliveries of message i (see
// MessageIndex), attempt by attempt. Attempts past the end of a row, and
// messages without a row, are acked.
type ScriptTable [][]Outcome

// Outcome returns the outcome of message i's delivery attempt (0 for the
// first).
func (s ScriptTable) Outcome(i, attempt int) Outcome {
	if i < 0 || i >= len(s) || attempt >= len(s[i]) {
		return Ack
	}
	return s[i][attempt]
}

// Script returns the table as the Script of a Driver. A table with rows
// cannot say what to do with a message without an index property (a
// message the test published without Index): the Driver fails the test,
// naming the message, instead of acking it.
func (s ScriptTable) Script() Script {
	return func(m pulsar.Message, attempt int) Outcome { return s.Outcome(s.index(m), attempt) }
}

// index returns a message's index for the table; it panics with unindexed
// when the table has rows and the message has no index.
func (s ScriptTable) index(m pulsar.Message) int {
	i := MessageIndex(m)
	if i < 0 && len(s) > 0 {
		panic(unindexed{MessageKey(m.ID())})
	}
	return i
}

// unindexed is what a ScriptTable panics with, for the Driver to report,
// when it is asked about a message without an index.
type unindexed struct{ id string }

func (u unindexed) Error() string {
	return fmt.Sprintf("message %s has no index property %q, so a ScriptTable cannot say what to do with it: "+
		"publish it with Properties: testkit.Index(n)", u.id, IndexProperty)
}

// IndexProperty is the message property that numbers a message for
// MessageIndex and ScriptTable.
const IndexProperty = "i"

// Index returns the properties that number a message n (for
// pulsar.ProducerMessage.Properties), as CheckHandler numbers its
// messages; MessageIndex reads it back.
func Index(n int) map[string]string { return map[string]string{IndexProperty: strconv.Itoa(n)} }

// Scripts generates script tables for up to 20 messages, each row with up
// to 4 outcomes drawn from outcomes (all four when none is given). Use them
// as a Driver's Script (ScriptTable.Script), or as the failures of what your
// own handler calls (ScriptTable.Flaky).
func Scripts(outcomes ...Outcome) *rapid.Generator[ScriptTable] {
	if len(outcomes) == 0 {
		outcomes = []Outcome{Ack, Nack, NoAnswer, Crash}
	}
	row := rapid.SliceOfN(rapid.SampledFrom(outcomes), 0, 4)
	return rapid.Custom(func(t *rapid.T) ScriptTable {
		return ScriptTable(rapid.SliceOfN(row, 0, 20).Draw(t, "rows"))
	})
}

// ErrFlaky is the error Flaky.Do returns where its script says a call
// fails.
var ErrFlaky = errors.New("testkit: scripted failure")

// scriptedCrash is what Flaky.Do panics with where its script says Crash.
type scriptedCrash struct{ key string }

// Flaky stands for what a handler calls to do its work (a database,
// another service), failing where a script says so. A handler under test
// calls Do with the message it handles. Use one Flaky per run: it counts
// the calls made for each message.
type Flaky struct {
	script ScriptTable
	mu     sync.Mutex
	calls  map[string]int
}

// Flaky returns a Flaky that follows the table.
func (s ScriptTable) Flaky() *Flaky { return &Flaky{script: s, calls: map[string]int{}} }

// Do is one call for message m. Its n-th call for a message does what the
// script says for (MessageIndex(m), n): it returns nil for Ack, ErrFlaky
// for Nack and NoAnswer, and for Crash it panics as the process would die
// there; a Driver (and so CheckHandler) takes that panic for a crash of the
// handler's consumer.
func (f *Flaky) Do(m pulsar.Message) error {
	key := MessageKey(m.ID())
	f.mu.Lock()
	attempt := f.calls[key]
	f.calls[key]++
	f.mu.Unlock()
	switch f.script.Outcome(f.script.index(m), attempt) {
	case Ack:
		return nil
	case Crash:
		panic(scriptedCrash{key})
	}
	return ErrFlaky
}
