// Package proxy is a Pulsar Proxy for a pulsarsim cluster: one address that
// clients are given, in front of brokers they need not reach by name, as
// Pulsar's proxy stands in front of a cluster in a docker-compose file.
//
// A client connects to the proxy as to a broker. A connection whose CONNECT
// names no broker (proxy_to_broker_url) is a lookup connection: the proxy
// answers CONNECTED itself, answers each LOOKUP by asking the brokers and
// following their redirects, then tells the client Connect to that broker
// through the proxy (proxy_through_service_url, authoritative), as Pulsar's
// LookupProxyHandler does; the other lookup-time commands
// (PARTITIONED_METADATA, GET_TOPICS_OF_NAMESPACE, GET_SCHEMA) go to one of
// the brokers and their answers come back. A connection whose CONNECT names
// a broker is relayed to it byte for byte, as Pulsar's DirectProxyHandler
// does. The admin API is proxied too (HTTPHandler), following the brokers'
// redirects itself.
//
// The proxy holds no lock of the broker package; its own lock (Proxy.mu)
// guards its listener and connection set and is a leaf. Authentication is
// not proxied: a proxy in front of brokers that authenticate is not
// supported.
package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// maxRedirects bounds the lookup redirects the proxy follows, as clients
// bound theirs.
const maxRedirects = 20

// maxProtocolVersion is the newest protocol version the proxy speaks, the
// brokers' own.
const maxProtocolVersion = 21

// Proxy is a Pulsar Proxy. Create it with New, start it with Listen, stop it
// with Close.
type Proxy struct {
	brokers func() []string // the brokers' pulsar:// URLs, asked in turn
	webs    func() []string // their http:// URLs, for the admin API
	next    atomic.Uint64
	frame   int          // the largest frame read from a client or broker
	relays  atomic.Int64 // connections relayed to a broker
	lookups atomic.Int64 // LOOKUPs answered

	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// New returns a proxy in front of the brokers whose pulsar:// URLs brokers
// returns, and whose admin APIs' http:// URLs webs returns (each asked
// every time, so that brokers may come and go).
func New(brokers, webs func() []string) *Proxy {
	return &Proxy{brokers: brokers, webs: webs, frame: protocol.MaxFrameSize(protocol.DefaultMaxMessageSize),
		conns: map[net.Conn]struct{}{}}
}

// Listen serves the binary protocol on addr ("127.0.0.1:0" for a free port).
func (p *Proxy) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.closed || p.ln != nil {
		p.mu.Unlock()
		ln.Close()
		return errors.New("proxy: closed or already serving")
	}
	p.ln = ln
	p.wg.Add(1)
	p.mu.Unlock()
	go p.accept(ln)
	return nil
}

// URL returns the proxy's service URL, "pulsar://host:port".
func (p *Proxy) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		return ""
	}
	return "pulsar://" + p.ln.Addr().String()
}

// Relayed counts the client connections the proxy has relayed to a broker.
func (p *Proxy) Relayed() int64 { return p.relays.Load() }

// Lookups counts the LOOKUPs the proxy answered.
func (p *Proxy) Lookups() int64 { return p.lookups.Load() }

// Close stops the listener, cuts every connection and waits for the
// proxy's goroutines.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	ln := p.ln
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	p.wg.Wait()
	return nil
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.untrack(c)
			p.serve(c)
		}()
	}
}

// track adds c to the connections Close cuts; false once closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// serve handles one client connection: a direct one relayed to its
// broker, or a lookup one.
func (p *Proxy) serve(client net.Conn) {
	body, err := protocol.ReadFrame(client, nil, p.frame)
	if err != nil {
		return
	}
	f, err := protocol.DecodeFrame(body)
	if err != nil || f.Command == nil || f.Command.GetType() != pb.BaseCommand_CONNECT {
		return // Pulsar's proxy closes a connection that does not start with CONNECT
	}
	if target := f.Command.GetConnect().GetProxyToBrokerUrl(); target != "" {
		p.relays.Add(1)
		p.relay(client, hostPort(target), body)
		return
	}
	p.serveLookups(client, f.Command.GetConnect())
}

// relay connects to the broker at addr, hands it the client's CONNECT and
// copies bytes both ways until either side closes.
func (p *Proxy) relay(client net.Conn, addr string, connect []byte) {
	broker, err := net.Dial("tcp", addr)
	if err != nil {
		writeCommand(client, protocol.ErrorCommand(0, pb.ServerError_ServiceNotReady,
			fmt.Sprintf("Failed to connect to the broker %s: %v", addr, err)))
		return
	}
	if !p.track(broker) {
		broker.Close()
		return
	}
	defer p.untrack(broker)
	if _, err := broker.Write(frameOf(connect)); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		io.Copy(client, broker)
		client.Close()
		close(done)
	}()
	io.Copy(broker, client)
	broker.Close()
	<-done
}

// serveLookups serves a lookup connection: CONNECTED from the proxy itself,
// LOOKUP answered by asking the brokers, the other commands of a lookup
// connection forwarded to one broker.
func (p *Proxy) serveLookups(client net.Conn, cc *pb.CommandConnect) {
	var wmu sync.Mutex
	send := func(cmd *pb.BaseCommand) {
		wmu.Lock()
		defer wmu.Unlock()
		writeCommand(client, cmd)
	}
	v := min(cc.GetProtocolVersion(), maxProtocolVersion)
	// Pulsar's proxy answers without max_message_size (seen on 4.0.8): a
	// lookup connection carries no messages.
	send(protocol.Base(pb.BaseCommand_CONNECTED, &pb.CommandConnected{
		ServerVersion: proto.String("Pulsar proxy (pulsarsim)"), ProtocolVersion: proto.Int32(v),
	}))
	var up *upstream // the broker the other commands go to, dialled at the first
	defer func() {
		if up != nil {
			up.close()
		}
	}()
	for {
		body, err := protocol.ReadFrame(client, nil, p.frame)
		if err != nil {
			return
		}
		f, err := protocol.DecodeFrame(body)
		if err != nil || f.Command == nil {
			return
		}
		cmd := f.Command
		switch cmd.GetType() {
		case pb.BaseCommand_PING:
			send(protocol.PongCommand())
		case pb.BaseCommand_PONG:
		case pb.BaseCommand_LOOKUP:
			p.lookups.Add(1)
			send(p.lookup(cmd.GetLookupTopic(), v))
		case pb.BaseCommand_PARTITIONED_METADATA, pb.BaseCommand_GET_TOPICS_OF_NAMESPACE,
			pb.BaseCommand_GET_SCHEMA, pb.BaseCommand_GET_OR_CREATE_SCHEMA:
			if up == nil {
				if up, err = p.dialUpstream(v, func(b []byte) {
					wmu.Lock()
					defer wmu.Unlock()
					client.Write(b)
				}); err != nil {
					send(protocol.ErrorCommand(requestID(cmd), pb.ServerError_ServiceNotReady, err.Error()))
					continue
				}
			}
			if err := up.write(body); err != nil {
				return
			}
		default:
			return // a lookup connection serves nothing else: Pulsar's proxy closes it
		}
	}
}

// lookup answers a client's LOOKUP: it asks a broker, follows its
// redirects, and answers Connect through the proxy to the broker that
// serves the topic.
func (p *Proxy) lookup(l *pb.CommandLookupTopic, version int32) *pb.BaseCommand {
	reqID := l.GetRequestId()
	failed := func(code pb.ServerError, msg string) *pb.BaseCommand {
		return protocol.Base(pb.BaseCommand_LOOKUP_RESPONSE, &pb.CommandLookupTopicResponse{
			RequestId: proto.Uint64(reqID), Response: pb.CommandLookupTopicResponse_Failed.Enum(),
			Error: code.Enum(), Message: proto.String(msg)})
	}
	target, err := p.pick()
	if err != nil {
		return failed(pb.ServerError_ServiceNotReady, err.Error())
	}
	authoritative := false
	for range maxRedirects {
		resp, err := askOnce(target, version, &pb.CommandLookupTopic{Topic: l.Topic, RequestId: proto.Uint64(1),
			Authoritative: proto.Bool(authoritative), AdvertisedListenerName: l.AdvertisedListenerName})
		if err != nil {
			return failed(pb.ServerError_ServiceNotReady, err.Error())
		}
		r := resp.GetLookupTopicResponse()
		switch r.GetResponse() {
		case pb.CommandLookupTopicResponse_Redirect:
			target, authoritative = hostPort(r.GetBrokerServiceUrl()), r.GetAuthoritative()
			continue
		case pb.CommandLookupTopicResponse_Connect:
			return protocol.Base(pb.BaseCommand_LOOKUP_RESPONSE, &pb.CommandLookupTopicResponse{
				RequestId: proto.Uint64(reqID), Response: pb.CommandLookupTopicResponse_Connect.Enum(),
				BrokerServiceUrl: r.BrokerServiceUrl, BrokerServiceUrlTls: r.BrokerServiceUrl,
				Authoritative: proto.Bool(true), ProxyThroughServiceUrl: proto.Bool(true)})
		default:
			r.RequestId = proto.Uint64(reqID)
			return resp
		}
	}
	return failed(pb.ServerError_ServiceNotReady, "Too many redirects looking up "+l.GetTopic())
}

// pick returns the next broker to ask, in turn.
func (p *Proxy) pick() (string, error) {
	bs := p.brokers()
	if len(bs) == 0 {
		return "", errors.New("No active broker is available")
	}
	return hostPort(bs[int(p.next.Add(1)-1)%len(bs)]), nil
}

// askOnce connects to the broker at addr, sends cmd after the handshake and
// returns its answer.
func askOnce(addr string, version int32, l *pb.CommandLookupTopic) (*pb.BaseCommand, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := handshake(c, version); err != nil {
		return nil, err
	}
	if err := writeCommand(c, protocol.Base(pb.BaseCommand_LOOKUP, l)); err != nil {
		return nil, err
	}
	for {
		f, err := readCommand(c)
		if err != nil {
			return nil, err
		}
		switch f.GetType() {
		case pb.BaseCommand_LOOKUP_RESPONSE:
			return f, nil
		case pb.BaseCommand_PING:
			writeCommand(c, protocol.PongCommand())
		}
	}
}

// upstream is a lookup connection's broker: what the client sends goes to
// it, and its answers go back to the client.
type upstream struct {
	c  net.Conn
	wg sync.WaitGroup
}

func (p *Proxy) dialUpstream(version int32, toClient func([]byte)) (*upstream, error) {
	addr, err := p.pick()
	if err != nil {
		return nil, err
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	if err := handshake(c, version); err != nil {
		c.Close()
		return nil, err
	}
	u := &upstream{c: c}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for {
			body, err := protocol.ReadFrame(c, nil, p.frame)
			if err != nil {
				return
			}
			if f, err := protocol.DecodeFrame(body); err == nil && f.Command != nil && f.Command.GetType() == pb.BaseCommand_PING {
				writeCommand(c, protocol.PongCommand())
				continue
			}
			toClient(frameOf(body))
		}
	}()
	return u, nil
}

func (u *upstream) write(body []byte) error {
	_, err := u.c.Write(frameOf(body))
	return err
}

func (u *upstream) close() {
	u.c.Close()
	u.wg.Wait()
}

// handshake sends the proxy's CONNECT and waits for CONNECTED.
func handshake(c net.Conn, version int32) error {
	if err := writeCommand(c, protocol.Base(pb.BaseCommand_CONNECT, &pb.CommandConnect{
		ClientVersion: proto.String("Pulsar proxy (pulsarsim)"), ProtocolVersion: proto.Int32(version)})); err != nil {
		return err
	}
	f, err := readCommand(c)
	if err != nil {
		return err
	}
	if f.GetType() != pb.BaseCommand_CONNECTED {
		return fmt.Errorf("the broker answered CONNECT with %s", f.GetType())
	}
	return nil
}

func readCommand(c net.Conn) (*pb.BaseCommand, error) {
	body, err := protocol.ReadFrame(c, nil, protocol.MaxFrameSize(protocol.DefaultMaxMessageSize))
	if err != nil {
		return nil, err
	}
	f, err := protocol.DecodeFrame(body)
	if err != nil {
		return nil, err
	}
	if f.Command == nil {
		return nil, errors.New("a command of a type this proxy does not know")
	}
	return f.Command, nil
}

func writeCommand(c net.Conn, cmd *pb.BaseCommand) error {
	_, err := c.Write(protocol.AppendCommand(nil, cmd))
	return err
}

// frameOf puts back the size prefix ReadFrame took off.
func frameOf(body []byte) []byte {
	out := make([]byte, 4+len(body))
	out[0], out[1], out[2], out[3] = byte(len(body)>>24), byte(len(body)>>16), byte(len(body)>>8), byte(len(body))
	copy(out[4:], body)
	return out
}

// hostPort is a broker URL's host:port ("pulsar://h:p" or "h:p").
func hostPort(u string) string {
	if _, rest, ok := strings.Cut(u, "://"); ok {
		u = rest
	}
	return strings.TrimSuffix(u, "/")
}

// requestID is a command's request id, for an error answer.
func requestID(cmd *pb.BaseCommand) uint64 {
	switch cmd.GetType() {
	case pb.BaseCommand_PARTITIONED_METADATA:
		return cmd.GetPartitionMetadata().GetRequestId()
	case pb.BaseCommand_GET_TOPICS_OF_NAMESPACE:
		return cmd.GetGetTopicsOfNamespace().GetRequestId()
	case pb.BaseCommand_GET_SCHEMA:
		return cmd.GetGetSchema().GetRequestId()
	case pb.BaseCommand_GET_OR_CREATE_SCHEMA:
		return cmd.GetGetOrCreateSchema().GetRequestId()
	}
	return 0
}
