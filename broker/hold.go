package broker

import (
	"bytes"
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Holding commands. A fault with Hold set sets the commands it matches
// aside instead of handling them: the connection goes on with its later
// commands (pulsar-client-go sends a consumer's ACK and
// REDELIVER_UNACKNOWLEDGED_MESSAGES on the same connection, so a held ACK
// must not stop the redelivery behind it). Release hands a held command back
// to its connection, which handles it as if it had just arrived, one at a
// time with the commands the connection reads: every command of a
// connection is handled under its handling lock (conn.hmu), taken by the
// reader for each frame it reads and by a release for each command it runs.
// A release never waits for that lock: when the connection is busy, the
// command is queued and whoever holds the lock runs it next. Held and queued
// commands are dropped when their connection closes.

// HeldCommand is a command a hold set aside. Its exported fields describe it;
// they do not change.
type HeldCommand struct {
	// Command is the command kind, CommandAck ("ACK") for instance.
	Command CommandType
	// Topic, Subscription, Consumer and Producer are what the command
	// concerns (as a Fault matches them), empty when it concerns none.
	Topic, Subscription, Consumer, Producer string
	// IDs lists the message ids the command names: the acknowledged ones of
	// an ACK, those of a REDELIVER_UNACKNOWLEDGED_MESSAGES (none means
	// all), the target of a SEEK.
	IDs []MessageID

	conn  *conn
	fault *FaultHandle
	frame protocol.Frame // a copy: the reader reuses its buffers

	state holdState // under conn.holdMu
	err   error     // set before done closes
	done  chan struct{}
}

type holdState int

const (
	stateHeld     holdState = iota // set aside
	stateReleased                  // queued to run on its connection
	stateFinished                  // handled, or dropped
)

// ErrCommandDropped is returned by HeldCommand.Wait when the command's
// connection closed before the command was handled: it is gone, as a
// command in flight is when its connection breaks.
var ErrCommandDropped = errors.New("broker: held command dropped with its connection")

// Proto returns a copy of the command as it arrived.
func (h *HeldCommand) Proto() *pb.BaseCommand { return proto.Clone(h.frame.Command).(*pb.BaseCommand) }

// Release hands the command back to its connection, which handles it as if
// it had arrived now: at once when the connection is idle (Release returns
// after it ran), else right after the command the connection is handling
// (this is the case when Release is called from an OnEvent hook). Wait
// reports when it has run. Release returns false when the command was
// already released, or dropped with its connection.
func (h *HeldCommand) Release() bool {
	c := h.conn
	c.holdMu.Lock()
	if h.state != stateHeld {
		c.holdMu.Unlock()
		return false
	}
	h.state = stateReleased
	delete(c.held, h)
	h.fault.forgetHeld(h)
	c.released = append(c.released, h)
	c.anyReleased.Store(true)
	c.holdMu.Unlock()
	c.runReleased()
	return true
}

// Wait blocks until the command has been handled after its release. It
// returns ErrCommandDropped when the command's connection closed first, and
// ctx's error when ctx ends.
func (h *HeldCommand) Wait(ctx context.Context) error {
	select {
	case <-h.done:
		return h.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// finish marks the command handled (err nil) or dropped. The caller holds
// conn.holdMu.
func (h *HeldCommand) finish(err error) {
	h.state = stateFinished
	h.err = err
	close(h.done)
}

// hold sets the command of f aside for the hold fault fh.
func (c *conn) hold(fh *FaultHandle, f protocol.Frame, scope commandScope) {
	h := &HeldCommand{
		Command: CommandType(f.Command.GetType().String()), Topic: scope.topic, Subscription: scope.subscription,
		Consumer: scope.consumer, Producer: scope.producer, IDs: commandIDs(f.Command),
		conn: c, fault: fh, done: make(chan struct{}),
		frame: protocol.Frame{Command: proto.Clone(f.Command).(*pb.BaseCommand), Payload: bytes.Clone(f.Payload)},
	}
	c.holdMu.Lock()
	if c.held == nil {
		c.held = map[*HeldCommand]struct{}{}
	}
	c.held[h] = struct{}{}
	fh.addHeld(h)
	c.holdMu.Unlock()
	c.log.Info("holding command", "type", h.Command, "topic", h.Topic)
}

// commandIDs returns the message ids a command names.
func commandIDs(cmd *pb.BaseCommand) []MessageID {
	var ids []*pb.MessageIdData
	switch {
	case cmd.Ack != nil:
		ids = cmd.Ack.GetMessageId()
	case cmd.RedeliverUnacknowledgedMessages != nil:
		ids = cmd.RedeliverUnacknowledgedMessages.GetMessageIds()
	case cmd.Seek != nil && cmd.Seek.MessageId != nil:
		ids = []*pb.MessageIdData{cmd.Seek.MessageId}
	}
	var out []MessageID
	for _, id := range ids {
		m := MessageID{Ledger: int64(id.GetLedgerId()), Entry: int64(id.GetEntryId()),
			Partition: id.GetPartition(), BatchIndex: -1}
		if id.BatchIndex != nil {
			m.BatchIndex = id.GetBatchIndex()
		}
		out = append(out, m)
	}
	return out
}

// runReleased runs the connection's released commands, in order, unless
// another goroutine is handling one of its commands: that one runs them
// when it is done (see readLoop), so nothing waits here.
func (c *conn) runReleased() {
	for c.anyReleased.Load() {
		if !c.hmu.TryLock() {
			return
		}
		c.runReleasedLocked()
		c.hmu.Unlock()
	}
}

// runReleasedLocked runs the queued released commands. The caller holds the
// handling lock.
func (c *conn) runReleasedLocked() {
	for {
		c.holdMu.Lock()
		if len(c.released) == 0 {
			c.anyReleased.Store(false)
			c.holdMu.Unlock()
			c.wakeDeferred() // this may not be the reader, which could be waiting
			return
		}
		h := c.released[0]
		c.released = c.released[1:]
		c.holdMu.Unlock()
		var err error
		select {
		case <-c.done:
			err = ErrCommandDropped // the connection is closing
		default:
			if !c.run(h.frame) {
				c.close()
			}
			c.keptFrame = false // the command's bytes are its own copy
		}
		c.holdMu.Lock()
		h.finish(err)
		c.holdMu.Unlock()
	}
}

// dropHeld drops the connection's held and released commands, as it closes.
// Nothing is held or released on it afterwards.
func (c *conn) dropHeld() {
	c.hmu.Lock() // wait for a release that is running a command
	c.holdMu.Lock()
	var dropped []*HeldCommand
	for h := range c.held {
		dropped = append(dropped, h)
	}
	dropped = append(dropped, c.released...)
	c.held, c.released = nil, nil
	c.anyReleased.Store(false)
	for _, h := range dropped {
		h.fault.forgetHeld(h)
		h.finish(ErrCommandDropped)
	}
	c.holdMu.Unlock()
	c.hmu.Unlock()
}

// addHeld records a command the fault holds. The caller holds the
// connection's hold queue lock.
func (fh *FaultHandle) addHeld(h *HeldCommand) {
	fh.mu.Lock()
	fh.held = append(fh.held, h)
	fh.log = append(fh.log, h)
	fh.holding--
	fh.notifyLocked()
	fh.mu.Unlock()
}

// forgetHeld removes a released or dropped command from the fault's list of
// held commands. The caller holds the connection's hold queue lock, so that
// the command leaves the list before anyone sees it run or dropped.
func (fh *FaultHandle) forgetHeld(h *HeldCommand) {
	fh.mu.Lock()
	defer fh.mu.Unlock()
	for i, o := range fh.held {
		if o == h {
			fh.held = append(fh.held[:i:i], fh.held[i+1:]...)
			return
		}
	}
}

// Next waits for the next command the fault holds and returns it: each held
// command once, in the order they were held (a command may have been
// released or dropped since). It returns ErrFaultDone when the fault is
// removed or retired and every command it held was returned, ErrClosed when
// the broker closes, and ctx's error when ctx ends.
func (fh *FaultHandle) Next(ctx context.Context) (*HeldCommand, error) {
	for {
		fh.mu.Lock()
		if fh.next < len(fh.log) {
			h := fh.log[fh.next]
			fh.next++
			fh.mu.Unlock()
			return h, nil
		}
		done, changed := fh.done && fh.holding == 0, fh.changed
		fh.mu.Unlock()
		if done {
			return nil, ErrFaultDone
		}
		select {
		case <-changed:
		case <-fh.b.done:
			return nil, ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Held returns the commands the fault holds now, in the order they were
// held.
func (fh *FaultHandle) Held() []*HeldCommand {
	fh.mu.Lock()
	defer fh.mu.Unlock()
	return append([]*HeldCommand(nil), fh.held...)
}

// ReleaseAll releases every command the fault holds, in the order they were
// held, and returns how many it released.
func (fh *FaultHandle) ReleaseAll() int {
	n := 0
	for _, h := range fh.Held() {
		if h.Release() {
			n++
		}
	}
	return n
}
