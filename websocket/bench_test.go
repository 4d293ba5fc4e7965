package websocket_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/pulsarsim/pulsarsim/testkit"
)

// BenchmarkWebSocketProduceConsumeAck sends b.N messages through a
// WebSocket producer (each answered) and has a WebSocket consumer push and
// ack each: the cost of one message's trip through the service and the
// broker.
func BenchmarkWebSocketProduceConsumeAck(b *testing.B) {
	k := testkit.Start(b, testkit.WithInactiveTopicsKept())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dial := func(url string) *websocket.Conn {
		c, _, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		return c
	}
	c := dial(k.WebSocketURL() + "/ws/v2/consumer/persistent/public/default/bench/s")
	p := dial(k.WebSocketURL() + "/ws/v2/producer/persistent/public/default/bench")
	done := make(chan error, 1)
	go func() {
		for range b.N {
			var m struct{ MessageID string }
			if err := c.ReadJSON(&m); err != nil {
				done <- err
				return
			}
			if err := c.WriteJSON(map[string]string{"messageId": m.MessageID}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	answers := make(chan error, 1)
	go func() {
		for range b.N {
			var a map[string]any
			_, data, err := p.ReadMessage()
			if err == nil && (json.Unmarshal(data, &a) != nil || a["result"] != "ok") {
				err = fmt.Errorf("answer %s", data)
			}
			if err != nil {
				answers <- err
				return
			}
		}
		answers <- nil
	}()
	frame := []byte(`{"payload":"aGVsbG8gd29ybGQ="}`)
	b.ResetTimer()
	for range b.N {
		if err := p.WriteMessage(websocket.TextMessage, frame); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-answers; err != nil {
		b.Fatal(err)
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
