package scenarios_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// The security comparison speaks the wire protocol by hand: the codes and
// messages of the broker's answers are what it compares, and a client
// library would hide them behind its own errors.

// secureCase connects with some credentials and sends requests; its outcome
// is one line per answer, and "closed" when the broker hangs up.
type secureCase struct {
	name     string
	method   string // auth_method_name, "" for none
	data     func(k secureKeys) string
	requests []secureRequest
	// tls connects to the pulsar+ssl listener, with the suite's client
	// certificate (CN admin) when cert is set.
	tls, cert bool
}

type secureRequest struct {
	kind     pb.BaseCommand_Type // LOOKUP, PARTITIONED_METADATA, PRODUCER, SUBSCRIBE
	listener string
	// authoritative marks a LOOKUP authoritative. Pulsar answers a lookup
	// that arrives while another of the same namespace bundle and the same
	// authoritative flag is under way (or just done) with that one's
	// result, whatever listener either named (NamespaceService's
	// findBrokerServiceUrl shares one future per bundle); the one lookup
	// that fails, the unknown listener's, is the only authoritative one, so
	// that no other can share its answer or lend it one.
	authoritative bool
}

// secureKeys are the suite's secret key and a token maker.
type secureKeys struct{ secret []byte }

func (k secureKeys) token(claims map[string]any) string {
	tok, err := auth.SignToken(claims, k.secret)
	if err != nil {
		panic(err)
	}
	return tok
}

var allRequests = []secureRequest{{kind: pb.BaseCommand_PARTITIONED_METADATA}, {kind: pb.BaseCommand_LOOKUP},
	{kind: pb.BaseCommand_PRODUCER}, {kind: pb.BaseCommand_SUBSCRIBE}}

var secureCases = []secureCase{
	{"no token: the anonymous role, without permission", "", nil, allRequests, false, false},
	{"bad signature", "token", func(secureKeys) string {
		tok, _ := auth.SignToken(map[string]any{"sub": "admin"}, []byte("a key the broker does not have"))
		return tok
	}, allRequests, false, false},
	{"expired token", "token", func(k secureKeys) string {
		return k.token(map[string]any{"sub": "admin", "exp": time.Now().Add(-time.Minute).Unix()})
	}, allRequests, false, false},
	{"token without sub", "token", func(k secureKeys) string { return k.token(map[string]any{"name": "admin"}) }, nil, false, false},
	{"role without permission", "token", func(k secureKeys) string { return k.token(map[string]any{"sub": "nobody"}) }, allRequests, false, false},
	{"super-user", "token", func(k secureKeys) string { return k.token(map[string]any{"sub": "admin"}) }, allRequests, false, false},
	{"unknown listener", "token", func(k secureKeys) string { return k.token(map[string]any{"sub": "admin"}) },
		[]secureRequest{{kind: pb.BaseCommand_LOOKUP, listener: "nope", authoritative: true}, {kind: pb.BaseCommand_LOOKUP, listener: "internal"}}, false, false},
	{"basic, right password", "basic", func(secureKeys) string { return "admin:123456" }, nil, false, false},
	{"basic, wrong password", "basic", func(secureKeys) string { return "admin:654321" }, nil, false, false},
	{"unknown method", "kerberos", func(secureKeys) string { return "x" }, []secureRequest{{kind: pb.BaseCommand_PRODUCER}}, false, false},
	{"TLS, client certificate of a super-user", "tls", func(secureKeys) string { return "" }, allRequests, true, true},
	{"TLS, tls method without a certificate", "tls", func(secureKeys) string { return "" }, nil, true, false},
	{"TLS, no credentials", "", nil, allRequests, true, false},
	{"TLS, token of a role without permission", "token", func(k secureKeys) string { return k.token(map[string]any{"sub": "nobody"}) },
		allRequests, true, true},
}

// TestSecurityErrorsMatchPulsar runs each case on pulsarsim and on a real
// Pulsar started with the client suite's security settings
// (scripts/real-pulsar start --security; PULSAR_SECURE_URL names its plain
// binary port), and compares the answers.
func TestSecurityErrorsMatchPulsar(t *testing.T) {
	url := os.Getenv("PULSAR_SECURE_URL")
	if url == "" {
		t.Skip("set PULSAR_SECURE_URL to a real Pulsar started with scripts/real-pulsar start --security")
	}
	it := suiteDir(t)
	secret, err := os.ReadFile(filepath.Join(it, "tokens", "secret.key"))
	if err != nil {
		t.Fatal(err)
	}
	htpasswd, err := os.ReadFile(filepath.Join(it, "conf", ".htpasswd"))
	if err != nil {
		t.Fatal(err)
	}
	users, err := auth.ParseHtpasswd(htpasswd)
	if err != nil {
		t.Fatal(err)
	}
	sim := broker.New(
		broker.WithAuthentication(&auth.Authenticator{Token: &auth.TokenVerifier{Secret: secret}, Basic: users, TLS: true, AnonymousRole: "anonymous"}),
		broker.WithAuthorization("localhost", "superUser", "admin"),
		broker.WithAdvertisedListeners(map[string]broker.AdvertisedListener{"internal": {URL: "pulsar://127.0.0.1:1"}}),
	)
	t.Cleanup(func() { sim.Close() })
	if err := sim.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if err := sim.ListenTLS("127.0.0.1:0", suiteServerTLS(t, it)); err != nil {
		t.Fatal(err)
	}
	realTLS := os.Getenv("PULSAR_SECURE_TLS_URL")
	if realTLS == "" {
		realTLS = "pulsar+ssl://localhost:" + nextPort(t, url)
	}
	keys := secureKeys{secret: secret}
	topic := fmt.Sprintf("persistent://pulsar/system/security-diff-%d", rand.Int63())
	for _, c := range secureCases {
		t.Run(c.name, func(t *testing.T) {
			realAddr, simAddr := strings.TrimPrefix(url, "pulsar://"), strings.TrimPrefix(sim.URL(), "pulsar://")
			if c.tls {
				_, port, _ := net.SplitHostPort(strings.TrimPrefix(sim.TLSURL(), "pulsar+ssl://"))
				realAddr, simAddr = strings.TrimPrefix(realTLS, "pulsar+ssl://"), "localhost:"+port
			}
			real := runSecureCase(t, realAddr, c, keys, topic, it)
			got := runSecureCase(t, simAddr, c, keys, topic, it)
			if diff := cmp.Diff(real, got); diff != "" {
				t.Fatalf("pulsarsim differs from Pulsar (-real +pulsarsim):\n%s", diff)
			}
			t.Logf("both: %q", got)
		})
	}
}

// suiteDir is pulsar-client-go's integration-tests folder (certs, tokens,
// .htpasswd), from the module cache.
func suiteDir(t *testing.T) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/apache/pulsar-client-go").Output()
	if err != nil {
		t.Fatalf("locating pulsar-client-go: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "integration-tests")
}

func runSecureCase(t *testing.T, addr string, c secureCase, keys secureKeys, topic, it string) []string {
	t.Helper()
	var nc net.Conn
	var err error
	if c.tls {
		nc, err = tls.Dial("tcp", addr, suiteClientTLS(t, it, c.cert))
	} else {
		nc, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	write := func(cmd *pb.BaseCommand) { _, _ = nc.Write(protocol.AppendCommand(nil, cmd)) }
	read := func() (*pb.BaseCommand, bool) {
		for {
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			body, err := protocol.ReadFrame(r, nil, 64<<20)
			if err != nil {
				return nil, false
			}
			f, err := protocol.DecodeFrame(body)
			if err != nil {
				t.Fatal(err)
			}
			if f.Command.GetType() != pb.BaseCommand_PING {
				return f.Command, true
			}
			write(protocol.PongCommand())
		}
	}
	cc := &pb.CommandConnect{ClientVersion: proto.String("security-diff"), ProtocolVersion: proto.Int32(20),
		FeatureFlags: &pb.FeatureFlags{SupportsAuthRefresh: proto.Bool(true)}}
	if c.method != "" {
		cc.AuthMethodName = proto.String(c.method)
		cc.AuthData = []byte(c.data(keys))
	}
	write(protocol.Base(pb.BaseCommand_CONNECT, cc))
	var out []string
	resp, ok := read()
	if !ok {
		return append(out, "closed")
	}
	out = append(out, describe(resp))
	if resp.Connected == nil {
		if _, ok := read(); !ok {
			out = append(out, "closed")
		}
		return out
	}
	for i, req := range c.requests {
		id := uint64(i + 1)
		switch req.kind {
		case pb.BaseCommand_PARTITIONED_METADATA:
			write(protocol.Base(req.kind, &pb.CommandPartitionedTopicMetadata{Topic: proto.String(topic), RequestId: proto.Uint64(id)}))
		case pb.BaseCommand_LOOKUP:
			write(protocol.Base(req.kind, &pb.CommandLookupTopic{Topic: proto.String(topic), RequestId: proto.Uint64(id),
				AdvertisedListenerName: proto.String(req.listener), Authoritative: proto.Bool(req.authoritative)}))
		case pb.BaseCommand_PRODUCER:
			write(protocol.Base(req.kind, &pb.CommandProducer{Topic: proto.String(topic), ProducerId: proto.Uint64(id), RequestId: proto.Uint64(id)}))
		case pb.BaseCommand_SUBSCRIBE:
			write(protocol.Base(req.kind, &pb.CommandSubscribe{Topic: proto.String(topic), Subscription: proto.String("diff"),
				SubType: pb.CommandSubscribe_Shared.Enum(), ConsumerId: proto.Uint64(id), RequestId: proto.Uint64(id)}))
		}
		resp, ok := read()
		if !ok {
			return append(out, "closed")
		}
		out = append(out, describe(resp))
	}
	return out
}

// describe keeps what both brokers must agree on: the answer's kind, its
// outcome and error code, and the error message.
func describe(cmd *pb.BaseCommand) string {
	switch {
	case cmd.Connected != nil:
		return "CONNECTED"
	case cmd.Error != nil:
		return fmt.Sprintf("ERROR %v %q", cmd.Error.GetError(), cmd.Error.GetMessage())
	case cmd.PartitionMetadataResponse != nil:
		r := cmd.PartitionMetadataResponse
		if r.GetResponse() == pb.CommandPartitionedTopicMetadataResponse_Success {
			return fmt.Sprintf("PARTITIONED_METADATA partitions=%d", r.GetPartitions())
		}
		return fmt.Sprintf("PARTITIONED_METADATA Failed %v %q", r.GetError(), r.GetMessage())
	case cmd.LookupTopicResponse != nil:
		r := cmd.LookupTopicResponse
		if r.GetResponse() == pb.CommandLookupTopicResponse_Failed {
			return fmt.Sprintf("LOOKUP Failed %v %q", r.GetError(), r.GetMessage())
		}
		return "LOOKUP " + r.GetResponse().String()
	case cmd.ProducerSuccess != nil:
		return "PRODUCER_SUCCESS"
	case cmd.Success != nil:
		return "SUCCESS"
	}
	return cmd.GetType().String()
}

// suiteServerTLS is the broker side of the suite's certificates: its broker
// certificate (for localhost), client certificates verified against its CA.
func suiteServerTLS(t *testing.T, it string) *tls.Config {
	pair, err := tls.LoadX509KeyPair(filepath.Join(it, "certs", "broker-cert.pem"), filepath.Join(it, "certs", "broker-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: suiteCA(t, it), ClientAuth: tls.VerifyClientCertIfGiven}
}

// suiteClientTLS trusts the suite's CA, checks the host name, and presents
// the suite's client certificate (CN admin) when cert is set.
func suiteClientTLS(t *testing.T, it string, cert bool) *tls.Config {
	cfg := &tls.Config{RootCAs: suiteCA(t, it), ServerName: "localhost"}
	if cert {
		pair, err := tls.LoadX509KeyPair(filepath.Join(it, "certs", "client-cert.pem"), filepath.Join(it, "certs", "client-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg
}

func suiteCA(t *testing.T, it string) *x509.CertPool {
	pem, err := os.ReadFile(filepath.Join(it, "certs", "cacert.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("no certificate in the suite's cacert.pem")
	}
	return pool
}

// nextPort is the port after url's: where scripts/real-pulsar --security
// puts the TLS listener by default.
func nextPort(t *testing.T, url string) string {
	_, port, err := net.SplitHostPort(strings.TrimPrefix(url, "pulsar://"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return strconv.Itoa(n + 1)
}
