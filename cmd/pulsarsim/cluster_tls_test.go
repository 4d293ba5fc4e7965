package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

// selfSigned returns a TLS configuration with a self-signed certificate for
// 127.0.0.1, and the path of its PEM file for clients to trust.
func selfSigned(t *testing.T) (*tls.Config, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pulsarsim test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "cert.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, file
}

// With a certificate, every broker of -brokers N serves pulsar+ssl:// and
// its admin API over https:// too, each logged, and a client holding the
// TLS URLs of both produces and consumes whichever broker owns the topic.
func TestBrokersFlagServesTLSOnEveryBroker(t *testing.T) {
	cfg, certFile := selfSigned(t)
	records := make(chan map[string]string, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serveCluster(ctx, clusterSpec{n: 2, addr: "127.0.0.1:0", httpAddr: "127.0.0.1:0",
			tlsCfg: cfg, tlsAddr: "127.0.0.1:0", httpsAddr: "127.0.0.1:0",
			logger: slog.New(recordHandler{records}), wrap: func(h http.Handler) (http.Handler, error) { return h, nil }})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serveCluster: %v", err)
		}
	}()
	var tlsURLs, httpsURLs []string
	for len(tlsURLs) < 2 {
		select {
		case r := <-records:
			if r["msg"] == "pulsarsim broker serving" {
				tlsURLs, httpsURLs = append(tlsURLs, r["tls"]), append(httpsURLs, r["admin-tls"])
			}
		case err := <-done:
			t.Fatalf("serveCluster returned early: %v", err)
		case <-time.After(30 * time.Second):
			t.Fatal("the brokers never said they were serving")
		}
	}
	pool := x509.NewCertPool()
	pem, _ := os.ReadFile(certFile)
	pool.AppendCertsFromPEM(pem)
	https := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for i, u := range httpsURLs {
		if !strings.HasPrefix(tlsURLs[i], "pulsar+ssl://") || !strings.HasPrefix(u, "https://") {
			t.Fatalf("broker %d logged %q and %q", i, tlsURLs[i], u)
		}
		resp, err := https.Get(u + "/admin/v2/brokers/standalone")
		if err != nil {
			t.Fatalf("admin API of broker %d over TLS: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("admin API of broker %d over TLS answered %s", i, resp.Status)
		}
	}
	hosts := make([]string, len(tlsURLs))
	for i, u := range tlsURLs {
		hosts[i] = strings.TrimPrefix(u, "pulsar+ssl://")
	}
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: "pulsar+ssl://" + strings.Join(hosts, ","),
		TLSTrustCertsFilePath: certFile, Logger: log.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	for _, topic := range []string{"tls-a", "tls-b", "tls-c", "tls-d"} {
		cons, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
		if err != nil {
			t.Fatalf("subscribe to %s over TLS: %v", topic, err)
		}
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatalf("producer on %s over TLS: %v", topic, err)
		}
		if _, err := p.Send(rctx, &pulsar.ProducerMessage{Payload: []byte(topic)}); err != nil {
			t.Fatal(err)
		}
		if m, err := cons.Receive(rctx); err != nil || string(m.Payload()) != topic {
			t.Fatalf("%s: %v", topic, err)
		}
		p.Close()
		cons.Close()
	}
}
