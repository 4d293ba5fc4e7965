package websocket_test

import (
	"context"
	"encoding/base64"
	"net/url"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/crypto"
	"github.com/pulsarsim/pulsarsim/testkit"
)

func TestWebSocketClientSideEncryptionReachesAGoConsumerAsEncrypted(t *testing.T) {
	b := testkit.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	goConsumer, err := b.Client().Subscribe(pulsar.ConsumerOptions{Topic: "ws-enc", SubscriptionName: "go",
		Decryption: &pulsar.MessageDecryptionInfo{ConsumerCryptoFailureAction: crypto.ConsumerCryptoFailureActionConsume}})
	if err != nil {
		t.Fatal(err)
	}
	defer goConsumer.Close()
	discard := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/consumer/persistent/public/default/ws-enc/discard?cryptoFailureAction=DISCARD", nil)

	keys := base64.StdEncoding.EncodeToString([]byte(`{"mykey":{"keyValue":"AQID","metadata":{"k":"v"}}}`))
	p := dialWS(ctx, t, b.WebSocketURL()+"/ws/v2/producer/persistent/public/default/ws-enc?encryptionKeys="+url.QueryEscape(keys), nil)
	writeJSON(t, p, map[string]string{"payload": base64.StdEncoding.EncodeToString([]byte("sealed")),
		"encryptionParam": base64.StdEncoding.EncodeToString([]byte("iv"))})
	if ack := readJSON[map[string]any](t, p); ack["result"] != "ok" {
		t.Fatalf("answer %v", ack)
	}

	m, err := goConsumer.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ec := m.GetEncryptionContext()
	if string(m.Payload()) != "sealed" || ec == nil || string(ec.Param) != "iv" ||
		string(ec.Keys["mykey"].KeyValue) != "\x01\x02\x03" || ec.Keys["mykey"].Metadata["k"] != "v" {
		t.Fatalf("Go consumer got %q with encryption context %+v", m.Payload(), ec)
	}
	// DISCARD acknowledges what it cannot decrypt, unseen.
	b.WaitBacklog(ctx, "ws-enc", "discard", 0)
	writeJSON(t, discard, map[string]string{"type": "isEndOfTopic"})
	if r := readJSON[map[string]any](t, discard); r["endOfTopic"] != false {
		t.Fatalf("the DISCARD consumer's first frame is %v, not the answer to isEndOfTopic", r)
	}
}
