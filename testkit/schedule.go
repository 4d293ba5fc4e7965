package testkit

import (
	"fmt"
	"time"

	"pgregory.net/rapid"
)

// FaultKind is what a ScheduledFault does.
type FaultKind int

// The kinds of scheduled fault.
const (
	// CrashConsumer kills the consumer that got the delivery, before its
	// handler sees it, as a process crash would (see Outcome Crash): its
	// connection is cut at the broker and a new consumer takes its place.
	CrashConsumer FaultKind = iota
	// CutConnection cuts the connection of the consumer that got the
	// delivery, as a network failure would; the same client reconnects and
	// subscribes again.
	CutConnection
	// DropConnections cuts every client connection, as a broker restart
	// would (the broker keeps its state); the clients reconnect.
	DropConnections
	// CloseConsumer closes the consumer that got the delivery from the
	// broker side (CLOSE_CONSUMER, as on a topic unload); the client
	// subscribes again.
	CloseConsumer
	// FailCommand answers the next Count commands of kind Command on the
	// topic with the error Error (see Fault).
	FailCommand
	// DelayCommand delays the next Count commands of kind Command on the
	// topic by Delay.
	DelayCommand
)

var faultKindNames = []string{"CrashConsumer", "CutConnection", "DropConnections", "CloseConsumer", "FailCommand", "DelayCommand"}

// String returns the kind's name.
func (k FaultKind) String() string {
	if k >= 0 && int(k) < len(faultKindNames) {
		return faultKindNames[k]
	}
	return fmt.Sprintf("FaultKind(%d)", int(k))
}

// GoString names the kind as Go code, for rapid's output.
func (k FaultKind) GoString() string { return "testkit." + k.String() }

// ScheduledFault is one fault of a FaultSchedule. It strikes at the
// After-th delivery (counted from 0 over all the consumers of a Driver): a
// CrashConsumer in its place, before the handler sees it; the others once
// the handler is done with it, so that its answer reached the broker first
// (Pulsar does not answer an ack with a request id for a consumer it closed,
// and pulsar-client-go waits for that answer until its operation timeout).
type ScheduledFault struct {
	After int
	Kind  FaultKind
	// Command, Count, Error and Delay describe a FailCommand or
	// DelayCommand fault.
	Command CommandType
	Count   int
	Error   ServerError
	Delay   time.Duration
}

// FaultSchedule is the faults of one run, which a Driver applies as the
// deliveries reach the handlers (DriverOptions.Faults).
type FaultSchedule []ScheduledFault

// at returns the faults that strike before delivery n.
func (s FaultSchedule) at(n int) []ScheduledFault {
	var out []ScheduledFault
	for _, f := range s {
		if f.After == n {
			out = append(out, f)
		}
	}
	return out
}

// cutsConnections reports whether the fault closes client connections.
func (f ScheduledFault) cutsConnections() bool {
	return f.Kind == CutConnection || f.Kind == DropConnections
}

// FaultSchedules generates schedules of up to 3 faults of the kinds given
// (all kinds when none is), striking within the first 30 deliveries. The
// failed commands are SUBSCRIBE and LOOKUP, with ServiceNotReady, which a
// client tries again (they come with the reconnections and restarts other
// faults cause); the delayed ones are ACK, FLOW and
// REDELIVER_UNACKNOWLEDGED_MESSAGES, by 10 or 50 ms.
func FaultSchedules(kinds ...FaultKind) *rapid.Generator[FaultSchedule] {
	if len(kinds) == 0 {
		kinds = []FaultKind{CrashConsumer, CutConnection, DropConnections, CloseConsumer, FailCommand, DelayCommand}
	}
	fault := rapid.Custom(func(t *rapid.T) ScheduledFault {
		f := ScheduledFault{After: rapid.IntRange(0, 30).Draw(t, "after"), Kind: rapid.SampledFrom(kinds).Draw(t, "kind")}
		switch f.Kind {
		case FailCommand:
			f.Command = rapid.SampledFrom([]CommandType{CommandSubscribe, CommandLookup}).Draw(t, "command")
			f.Count = rapid.IntRange(1, 2).Draw(t, "count")
			f.Error = ServerErrorServiceNotReady
		case DelayCommand:
			f.Command = rapid.SampledFrom([]CommandType{CommandAck, CommandFlow, CommandRedeliverUnacknowledgedMessages}).Draw(t, "command")
			f.Count = rapid.IntRange(1, 3).Draw(t, "count")
			f.Delay = rapid.SampledFrom([]time.Duration{10 * time.Millisecond, 50 * time.Millisecond}).Draw(t, "delay")
		}
		return f
	})
	return rapid.Custom(func(t *rapid.T) FaultSchedule {
		return FaultSchedule(rapid.SliceOfN(fault, 0, 3).Draw(t, "faults"))
	})
}
