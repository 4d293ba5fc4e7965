package broker

import (
	"io"
	"net"
)

// outbound is a connection's queue of bytes to write: frames encoded into
// buf, and large entry payloads kept by reference, each to be written at an
// offset of buf. Writing an entry by reference spares copying it into the
// queue (a batch of 1 KiB messages is about 128 KiB); the writer hands the
// pieces to the socket in one writev. Stored entries never change, so the
// reference stays valid.
type outbound struct {
	buf  []byte
	refs []outboundRef
}

// outboundRef is a payload written after buf[:at] and before buf[at:].
type outboundRef struct {
	at   int
	data []byte
}

// refMinSize is the smallest payload the queue keeps by reference; smaller
// ones are copied, which costs less than another piece in the writev.
const refMinSize = 4 << 10

// appendPayload queues payload after what buf holds now. It returns the
// bytes queued since start, an earlier length of buf: the frame's head that
// the caller appended, and payload.
func (o *outbound) appendPayload(start int, payload []byte) int {
	if len(payload) < refMinSize {
		o.buf = append(o.buf, payload...)
		return len(o.buf) - start
	}
	o.refs = append(o.refs, outboundRef{at: len(o.buf), data: payload})
	return len(o.buf) - start + len(payload)
}

// size returns the number of bytes queued.
func (o *outbound) size() int {
	n := len(o.buf)
	for _, r := range o.refs {
		n += len(r.data)
	}
	return n
}

// writeTo writes the queue to w in order; pieces is scratch space for the
// writev.
func (o *outbound) writeTo(w io.Writer, pieces *net.Buffers) error {
	if len(o.refs) == 0 {
		_, err := w.Write(o.buf)
		return err
	}
	bufs := (*pieces)[:0]
	prev := 0
	for _, r := range o.refs {
		if r.at > prev {
			bufs = append(bufs, o.buf[prev:r.at])
		}
		bufs = append(bufs, r.data)
		prev = r.at
	}
	if prev < len(o.buf) {
		bufs = append(bufs, o.buf[prev:])
	}
	*pieces = bufs
	_, err := bufs.WriteTo(w) // consumes a copy of the slice header
	clear(*pieces)            // let written entries be freed
	return err
}

// reset empties the queue, keeping its memory unless it grew large.
func (o *outbound) reset() {
	if cap(o.buf) > 1<<20 {
		o.buf = nil // do not keep a huge buffer around
	}
	o.buf = o.buf[:0]
	clear(o.refs)
	o.refs = o.refs[:0]
}
