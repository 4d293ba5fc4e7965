package websocket

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// The server side of RFC 6455, as much of it as Pulsar's WebSocket API
// needs: the opening handshake, text messages each way (fragmented or not),
// pings answered with pongs, and the closing handshake.

// acceptGUID is the fixed string of the opening handshake's accept key.
const acceptGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// Frame opcodes.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// Close status codes of RFC 6455 section 7.4.1.
const (
	closeNormal        = 1000
	closeGoingAway     = 1001
	closeProtocolError = 1002
	closeNoStatus      = 1005
	closeInvalidData   = 1007
	closeTooBig        = 1009
	closeServerError   = 1011
)

// errIdle is what a read returns once the connection has been idle
// (nothing read or written) for its idle timeout.
var errIdle = errors.New("websocket: idle timeout")

// closeError is what a read returns once the peer closed the WebSocket (or
// the server had to): the status code and reason of the close frame.
type closeError struct {
	code   int
	reason string
}

func (e *closeError) Error() string { return fmt.Sprintf("websocket closed: %d %s", e.code, e.reason) }

// isUpgrade reports whether r asks for a WebSocket (an Upgrade: websocket
// GET with a Connection: upgrade token).
func isUpgrade(r *http.Request) bool {
	return r.Method == http.MethodGet && headerHasToken(r.Header, "Connection", "upgrade") &&
		strings.EqualFold(strings.TrimSpace(r.Header.Get("Upgrade")), "websocket")
}

// headerHasToken reports whether a comma-separated header holds token.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// handshakeError returns why r is not a valid version 13 opening
// handshake, or "" when it is.
func handshakeError(r *http.Request) string {
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		return "Unsupported websocket version specification"
	}
	key, err := base64.StdEncoding.DecodeString(r.Header.Get("Sec-WebSocket-Key"))
	if err != nil || len(key) != 16 {
		return "Missing request header 'Sec-WebSocket-Key'"
	}
	return ""
}

// conn is one server-side WebSocket.
type conn struct {
	nc      net.Conn
	br      *bufio.Reader
	maxSize int           // the largest message read, in bytes
	idle    time.Duration // the idle timeout, 0 for none

	wmu    sync.Mutex // serializes frame writes
	closed bool       // a close frame was sent; under wmu

	// lastActive is when a frame was last read or written (Unix
	// nanoseconds): the idle timeout counts from it, as Jetty's does.
	lastActive atomic.Int64
}

// touch records activity now.
func (c *conn) touch() { c.lastActive.Store(time.Now().UnixNano()) }

// idleFor returns how long the connection has been without activity.
func (c *conn) idleFor() time.Duration {
	return time.Duration(time.Now().UnixNano() - c.lastActive.Load())
}

// upgrade answers r's opening handshake with 101 and takes over its
// connection. The caller checked the handshake (handshakeError).
func upgrade(w http.ResponseWriter, r *http.Request, maxSize int, idle time.Duration) (*conn, error) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, errors.New("websocket: the response cannot be hijacked")
	}
	nc, rw, err := hj.Hijack()
	if err != nil {
		return nil, err
	}
	sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + acceptGUID))
	resp := "HTTP/1.1 101 Switching Protocols\r\n" +
		"Date: " + time.Now().UTC().Format(http.TimeFormat) + "\r\n" +
		"Connection: Upgrade\r\n" +
		"Sec-WebSocket-Accept: " + base64.StdEncoding.EncodeToString(sum[:]) + "\r\n" +
		"Upgrade: WebSocket\r\n\r\n"
	_ = nc.SetDeadline(time.Time{})
	if _, err := io.WriteString(nc, resp); err != nil {
		nc.Close()
		return nil, err
	}
	c := &conn{nc: nc, br: rw.Reader, maxSize: maxSize, idle: idle}
	c.touch()
	return c, nil
}

// readMessage returns the next text or binary message. It answers pings,
// ignores pongs and, on a close frame, answers it and returns a
// *closeError. A frame that breaks the protocol closes the WebSocket with
// the status RFC 6455 gives it.
func (c *conn) readMessage() (op int, msg []byte, err error) {
	op = -1
	for {
		if ok, idle := c.waitFrame(c.idle); !ok {
			if idle {
				return 0, nil, errIdle
			}
			return 0, nil, io.ErrUnexpectedEOF
		}
		fin, fop, payload, err := c.readFrame()
		if err != nil {
			return 0, nil, err
		}
		switch fop {
		case opPing:
			if err := c.writeFrame(opPong, payload); err != nil {
				return 0, nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			code, reason := closeNoStatus, ""
			if len(payload) >= 2 {
				code, reason = int(binary.BigEndian.Uint16(payload)), string(payload[2:])
			}
			if len(payload) == 1 {
				return 0, nil, c.fail(closeProtocolError, "Invalid close frame payload length")
			}
			answer := code
			if code == closeNoStatus {
				answer = closeNormal
			}
			_ = c.writeClose(answer, "")
			return 0, nil, &closeError{code, reason}
		case opText, opBinary:
			if op != -1 {
				return 0, nil, c.fail(closeProtocolError, "Unexpected "+opName(fop)+" frame, was expecting CONTINUATION")
			}
			op = fop
			msg = payload
		case opContinuation:
			if op == -1 {
				return 0, nil, c.fail(closeProtocolError, "CONTINUATION frame without prior !FIN")
			}
			msg = append(msg, payload...)
		default:
			return 0, nil, c.fail(closeProtocolError, fmt.Sprintf("Unknown opcode: %d", fop))
		}
		if len(msg) > c.maxSize {
			return 0, nil, c.fail(closeTooBig, fmt.Sprintf("Text message size [%d] exceeds maximum size [%d]", len(msg), c.maxSize))
		}
		if fin {
			if op == opText && !utf8.Valid(msg) {
				return 0, nil, c.fail(closeInvalidData, "Invalid UTF-8")
			}
			return op, msg, nil
		}
	}
}

func opName(op int) string {
	if op == opText {
		return "TEXT"
	}
	return "BINARY"
}

// fail closes the WebSocket for a protocol error and returns the error.
func (c *conn) fail(code int, reason string) error {
	_ = c.writeClose(code, reason)
	return &closeError{code, reason}
}

// readFrame reads one frame and unmasks its payload.
func (c *conn) readFrame() (fin bool, op int, payload []byte, err error) {
	var h [2]byte
	if _, err := io.ReadFull(c.br, h[:]); err != nil {
		return false, 0, nil, err
	}
	fin, op = h[0]&0x80 != 0, int(h[0]&0x0F)
	if h[0]&0x70 != 0 {
		return false, 0, nil, c.fail(closeProtocolError, "RSV bits set without an extension")
	}
	if h[1]&0x80 == 0 {
		return false, 0, nil, c.fail(closeProtocolError, "Client frame is not masked")
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(c.br, ext[:]); err != nil {
			return false, 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(c.br, ext[:]); err != nil {
			return false, 0, nil, err
		}
		n = binary.BigEndian.Uint64(ext[:])
	}
	control := op >= opClose
	if control && (n > 125 || !fin) {
		return false, 0, nil, c.fail(closeProtocolError, "Invalid control frame")
	}
	if n > uint64(c.maxSize) {
		return false, 0, nil, c.fail(closeTooBig, fmt.Sprintf("Text message size [%d] exceeds maximum size [%d]", n, c.maxSize))
	}
	var mask [4]byte
	if _, err := io.ReadFull(c.br, mask[:]); err != nil {
		return false, 0, nil, err
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(c.br, payload); err != nil {
		return false, 0, nil, err
	}
	for i := range payload {
		payload[i] ^= mask[i%4]
	}
	c.touch()
	return fin, op, payload, nil
}

// writeText sends one text message, unfragmented.
func (c *conn) writeText(msg []byte) error { return c.writeFrame(opText, msg) }

// writePing sends a ping.
func (c *conn) writePing(data []byte) error { return c.writeFrame(opPing, data) }

// writeClose sends a close frame, once; later frames are not sent.
func (c *conn) writeClose(code int, reason string) error {
	if len(reason) > 123 {
		reason = reason[:123]
	}
	payload := make([]byte, 2+len(reason))
	binary.BigEndian.PutUint16(payload, uint16(code))
	copy(payload[2:], reason)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.writeFrameLocked(opClose, payload)
}

// writeFrame sends one unmasked final frame.
func (c *conn) writeFrame(op int, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closed {
		return net.ErrClosed
	}
	return c.writeFrameLocked(op, payload)
}

func (c *conn) writeFrameLocked(op int, payload []byte) error {
	hdr := make([]byte, 2, 10+len(payload))
	hdr[0] = 0x80 | byte(op)
	switch n := len(payload); {
	case n <= 125:
		hdr[1] = byte(n)
	case n <= 0xFFFF:
		hdr[1] = 126
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(n))
	default:
		hdr[1] = 127
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := c.nc.Write(append(hdr, payload...))
	if err == nil {
		c.touch()
	}
	return err
}

// writeTimeout bounds one frame write, so that a client that stops reading
// cannot hold a session's writer for ever.
const writeTimeout = 30 * time.Second

// close closes the connection (after a close frame, when one was sent).
func (c *conn) close() error { return c.nc.Close() }

// waitFrame waits until the next frame's first byte arrives, or the
// connection has been idle (nothing read or written) for idle; it returns
// false then, or when the connection broke. idle 0 waits for ever.
func (c *conn) waitFrame(idle time.Duration) (ok, timedOut bool) {
	for {
		if idle > 0 {
			_ = c.nc.SetReadDeadline(time.Unix(0, c.lastActive.Load()).Add(idle))
		}
		_, err := c.br.Peek(1)
		if err == nil {
			if idle > 0 {
				// A frame that stalls halfway for idle ends the session.
				_ = c.nc.SetReadDeadline(time.Now().Add(idle))
			}
			return true, false
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			return false, false
		}
		if c.idleFor() >= idle {
			return false, true
		}
	}
}
