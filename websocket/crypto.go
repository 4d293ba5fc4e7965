package websocket

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/crypto"
)

// End-to-end encryption through the WebSocket API, as Pulsar 4.0.8 serves
// it without a crypto key reader of its own: a producer whose encryptionKeys
// parameter is base64 JSON ({"name":{"keyValue":base64,"metadata":{...}}})
// sends payloads its client encrypted, each with the frame's
// encryptionParam, and the service only writes the keys and the parameter
// into the message's metadata (Pulsar's WSSDummyMessageCryptoImpl); a
// consumer with cryptoFailureAction=CONSUME gets encrypted messages as they
// are, with their encryptionContext, FAIL (the default) leaves them
// undelivered, DISCARD acknowledges them.

// encryptionKey is one key of a producer's encryptionKeys parameter.
type encryptionKey struct {
	KeyValue []byte            `json:"keyValue"`
	Metadata map[string]string `json:"metadata"`
}

// clientSideKeys reads encryptionKeys as ProducerHandler does: nil when it
// is not base64 JSON with a first key holding a value (Pulsar then takes it
// for a list of key names), an error for a blank key name.
func clientSideKeys(v string) (map[string]encryptionKey, error) {
	data, err := decodeBase64(strings.TrimSpace(v))
	if err != nil {
		return nil, nil
	}
	var keys map[string]*encryptionKey
	if err := json.Unmarshal(data, &keys); err != nil || len(keys) == 0 {
		return nil, nil
	}
	out := map[string]encryptionKey{}
	for name, k := range keys {
		if k == nil || k.KeyValue == nil {
			return nil, nil
		}
		if strings.TrimSpace(name) == "" {
			return nil, badParam("Empty param encryptionKeys.key")
		}
		out[strings.TrimSpace(name)] = *k
	}
	return out, nil
}

// passThroughCrypto is the producer's MessageCrypto for client-side
// encryption: the payload stays as the client encrypted it, and the
// metadata gets the keys and the frame's encryption parameter.
type passThroughCrypto struct {
	keys map[string]encryptionKey

	mu sync.Mutex
	// params holds each message's encryption parameter by payload, in send
	// order (the internal producer encrypts in that order and shows the
	// crypto nothing but the payload).
	params map[string][][]byte
}

// expect records the encryption parameter of the next message with this
// payload.
func (c *passThroughCrypto) expect(payload, param []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.params[string(payload)] = append(c.params[string(payload)], param)
}

// AddPublicKeyCipher does nothing: the client encrypted the data key.
func (c *passThroughCrypto) AddPublicKeyCipher([]string, crypto.KeyReader) error { return nil }

// RemoveKeyCipher does nothing.
func (c *passThroughCrypto) RemoveKeyCipher(string) bool { return true }

// Encrypt returns the payload unchanged and writes the keys and the
// message's parameter into its metadata.
func (c *passThroughCrypto) Encrypt(_ []string, _ crypto.KeyReader, md crypto.MessageMetadataSupplier, payload []byte) ([]byte, error) {
	for name, k := range c.keys {
		md.UpsertEncryptionKey(*crypto.NewEncryptionKeyInfo(name, k.KeyValue, k.Metadata))
	}
	c.mu.Lock()
	q := c.params[string(payload)]
	var param []byte
	if len(q) > 0 {
		param = q[0]
		if len(q) == 1 {
			delete(c.params, string(payload))
		} else {
			c.params[string(payload)] = q[1:]
		}
	}
	c.mu.Unlock()
	if param != nil {
		md.SetEncryptionParam(param)
	}
	return payload, nil
}

// Decrypt is never called: producers do not decrypt.
func (c *passThroughCrypto) Decrypt(crypto.MessageMetadataSupplier, []byte, crypto.KeyReader) ([]byte, error) {
	return nil, errors.New("not a consumer")
}

// noKeys is the key reader the internal producer requires and never uses.
type noKeys struct{}

// PublicKey has no key to give.
func (noKeys) PublicKey(string, map[string]string) (*crypto.EncryptionKeyInfo, error) {
	return nil, errors.New("no key reader")
}

// PrivateKey has no key to give.
func (noKeys) PrivateKey(string, map[string]string) (*crypto.EncryptionKeyInfo, error) {
	return nil, errors.New("no key reader")
}

// cryptoFailure is a consumer's or reader's cryptoFailureAction.
type cryptoFailure int

const (
	cryptoFail cryptoFailure = iota
	cryptoDiscard
	cryptoConsume
)

// readCryptoFailure reads cryptoFailureAction; Pulsar ignores a value it
// does not know (FAIL stays).
func readCryptoFailure(q map[string]string) cryptoFailure {
	switch q["cryptoFailureAction"] {
	case "DISCARD":
		return cryptoDiscard
	case "CONSUME":
		return cryptoConsume
	}
	return cryptoFail
}

// consumeEncrypted makes the internal consumer or reader hand encrypted
// messages over as they are (it has no key reader), for the session to
// apply the client's cryptoFailureAction.
func consumeEncrypted() *pulsar.MessageDecryptionInfo {
	return &pulsar.MessageDecryptionInfo{ConsumerCryptoFailureAction: crypto.ConsumerCryptoFailureActionConsume}
}

// encrypted reports whether a message came encrypted.
func encrypted(msg pulsar.Message) bool {
	ec := msg.GetEncryptionContext()
	return ec != nil && len(ec.Keys) > 0
}

// encryptionContextJSON is Pulsar's EncryptionContext as its JSON writer
// writes it in a pushed message: the algorithm only when set, the batch size
// null outside a batch.
type encryptionContextJSON struct {
	Keys                    map[string]encryptionKey `json:"keys"`
	Param                   []byte                   `json:"param"`
	Algorithm               string                   `json:"algorithm,omitempty"`
	CompressionType         string                   `json:"compressionType"`
	UncompressedMessageSize int                      `json:"uncompressedMessageSize"`
	BatchSize               *int                     `json:"batchSize"`
}

// compressionNames are the Java client's names of the codecs, by their
// number in the protocol.
var compressionNames = []string{"NONE", "LZ4", "ZLIB", "ZSTD", "SNAPPY"}

// encryptionContext is an encrypted message's context, nil for a message
// that is not encrypted. Its batch size is null outside a batch: the
// internal producer (pulsar-client-go) writes a batch count of 1 on a
// message sent alone, where the Java client writes none.
func encryptionContext(msg pulsar.Message, batched bool) *encryptionContextJSON {
	ec := msg.GetEncryptionContext()
	if ec == nil || len(ec.Keys) == 0 {
		return nil
	}
	out := &encryptionContextJSON{Keys: map[string]encryptionKey{}, Param: ec.Param, Algorithm: ec.Algorithm,
		CompressionType: "NONE", UncompressedMessageSize: ec.UncompressedSize}
	for name, k := range ec.Keys {
		md := k.Metadata
		if md == nil {
			md = map[string]string{}
		}
		out.Keys[name] = encryptionKey{KeyValue: k.KeyValue, Metadata: md}
	}
	if c := int(ec.CompressionType); c >= 0 && c < len(compressionNames) {
		out.CompressionType = compressionNames[c]
	}
	if batched && ec.BatchSize > 0 {
		n := ec.BatchSize
		out.BatchSize = &n
	}
	return out
}
