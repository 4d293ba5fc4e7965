package testkit

import (
	"strings"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/pulsarsim/pulsarsim/websocket"
)

// WebSocketURL returns the base of this broker's WebSocket API,
// "ws://127.0.0.1:PORT" on the admin port (AdminURL): a producer is at
// WebSocketURL() + "/ws/v2/producer/persistent/public/default/my-topic", a
// consumer at .../consumer/persistent/public/default/my-topic/my-sub, a
// reader at .../reader/persistent/public/default/my-topic. Sessions end
// when the test ends.
func (b *Broker) WebSocketURL() string {
	b.tb.Helper()
	return "ws" + strings.TrimPrefix(b.AdminURL(), "http")
}

// webSocketServer returns the WebSocket API for the admin port. Under token
// authentication its internal client presents a token of the first
// super-user (or of the role "websocket" when there is none), as Pulsar's
// websocket service presents its brokerClient credentials.
func (b *Broker) webSocketServer() *websocket.Server {
	var opts []websocket.Option
	if b.secret != nil {
		role := "websocket"
		if len(b.superUsers) > 0 {
			role = b.superUsers[0]
		}
		token := b.Token(role)
		opts = append(opts, websocket.WithClientOptions(func(o *pulsar.ClientOptions) {
			o.Authentication = pulsar.NewAuthenticationToken(token)
		}))
	}
	return websocket.New(b.srv, opts...)
}
