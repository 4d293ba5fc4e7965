package websocket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// session is one WebSocket client: a producer, consumer or reader of the
// internal client, the WebSocket it speaks through, and the goroutines
// that serve it.
type session struct {
	srv *Server
	c   *conn
	ctx context.Context
	// cancel ends ctx: the session's goroutines return.
	cancel context.CancelFunc

	// onText handles one text message from the client.
	onText func(msg []byte)
	// start runs the session's own goroutines (with go) once the
	// WebSocket is open.
	start func()
	// closeClient closes the internal producer, consumer or reader.
	closeClient func()

	wg      sync.WaitGroup // the goroutines started with go
	endOnce sync.Once
	relOnce sync.Once
}

func newSession(srv *Server) *session {
	ctx, cancel := context.WithCancel(context.Background())
	return &session{srv: srv, ctx: ctx, cancel: cancel, onText: func([]byte) {}, start: func() {}, closeClient: func() {}}
}

// go runs fn on a goroutine of the session.
func (ss *session) goRun(fn func()) {
	ss.wg.Add(1)
	go func() {
		defer ss.wg.Done()
		fn()
	}()
}

// release closes the internal client's producer, consumer or reader, once.
func (ss *session) release() {
	ss.relOnce.Do(func() {
		ss.cancel()
		ss.closeClient()
	})
}

// end closes the WebSocket with a status (when it is still open) and
// releases the session. The read loop then returns.
func (ss *session) end(code int, reason string) {
	ss.endOnce.Do(func() {
		if ss.c != nil {
			_ = ss.c.writeClose(code, reason)
		}
		ss.release()
		if ss.c != nil {
			_ = ss.c.close()
		}
	})
}

// drop closes the connection without a close frame, as Jetty does when a
// handler closes a session with one of Pulsar's own codes (below 1000, not
// valid on the wire).
func (ss *session) drop() {
	ss.endOnce.Do(func() {
		ss.release()
		if ss.c != nil {
			_ = ss.c.close()
		}
	})
}

// send writes v as one JSON text message; a failed write ends the session.
func (ss *session) send(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		ss.drop()
		return err
	}
	if err := ss.c.writeText(data); err != nil {
		ss.end(closeGoingAway, "")
		return err
	}
	return nil
}

// run serves an open WebSocket until it closes: the session's goroutines,
// the keep-alive pings, and the read loop on this goroutine.
func (s *Server) run(ss *session, c *conn) {
	ss.c = c
	if !s.add(ss) {
		ss.end(closeGoingAway, "Shutdown")
		return
	}
	defer s.remove(ss)
	ss.start()
	if s.pingInterval > 0 {
		ss.goRun(func() {
			t := time.NewTicker(s.pingInterval)
			defer t.Stop()
			for {
				select {
				case <-ss.ctx.Done():
					return
				case <-t.C:
					_ = c.writePing([]byte("PING"))
				}
			}
		})
	}
	for {
		op, msg, err := c.readMessage()
		if errors.Is(err, errIdle) {
			// Jetty's words, with the time idle and the timeout.
			ss.end(closeGoingAway, fmt.Sprintf("java.util.concurrent.TimeoutException: Idle timeout expired: %d/%d ms",
				c.idleFor().Milliseconds(), s.idleTimeout.Milliseconds()))
		}
		if err != nil {
			break
		}
		if op == opText {
			ss.onText(msg)
		}
	}
	ss.end(closeNormal, "")
	ss.wg.Wait()
}
