package broker

import (
	"crypto/tls"
	"errors"
	"net"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/pulsarsim/pulsarsim/bundles"
	"github.com/pulsarsim/pulsarsim/protocol"
	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// AdvertisedListener is one named listener of advertisedListeners: the URLs
// a lookup naming it returns.
type AdvertisedListener struct {
	URL    string // pulsar://host:port
	TLSURL string // pulsar+ssl://host:port, or ""
}

// WithAdvertisedAddress sets advertisedAddress: the host name lookups return
// in the broker's URLs (as Pulsar's standalone advertises "localhost"). The
// default is the address the broker listens on. A TLS client that verifies
// host names needs it to match the certificate.
func WithAdvertisedAddress(host string) Option { return func(c *config) { c.advertisedAddress = host } }

// WithAdvertisedListeners sets the named listeners (advertisedListeners). A
// lookup naming a listener gets that listener's URLs; one naming a listener
// the broker lacks fails with ServiceNotReady, as on Pulsar.
func WithAdvertisedListeners(l map[string]AdvertisedListener) Option {
	return func(c *config) { c.listeners = l }
}

// ListenTLS serves the binary protocol over TLS (pulsar+ssl://) on addr with
// cfg, beside the plain listener, and returns at once. cfg.ClientAuth says
// whether client certificates are optional or required; the TLS
// authentication provider takes the role from a verified one.
func (b *Broker) ListenTLS(addr string, cfg *tls.Config) error {
	if cfg == nil || (len(cfg.Certificates) == 0 && cfg.GetCertificate == nil) {
		return errors.New("broker: ListenTLS needs a certificate")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	b.mu.Lock()
	if b.closed || b.tlsLn != nil {
		b.mu.Unlock()
		ln.Close()
		if b.closed {
			return ErrClosed
		}
		return errors.New("broker: already serving TLS")
	}
	b.tlsLn = ln
	b.reach.tlsCfg = cfg
	b.tlsURL = "pulsar+ssl://" + ln.Addr().String()
	b.data.Owners.Update(b.node, func(nd *bundles.Node) { nd.TLSURL = b.advertise(b.tlsURL) })
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		_ = b.acceptLoop(tls.NewListener(ln, cfg)) // a failure is logged, and Close returns it
	}()
	return nil
}

// TLSURL returns the broker's pulsar+ssl:// URL, or "" when it serves no TLS.
func (b *Broker) TLSURL() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tlsURL
}

// LookupURLs returns the URLs a lookup answers with: those of the named
// listener, or (for "") the broker's own under its advertised address.
func (b *Broker) LookupURLs(listener string) (url, tlsURL string, err error) {
	if listener != "" {
		l, ok := b.cfg.listeners[listener]
		if !ok {
			return "", "", errors.New("the broker do not have " + listener + " listener")
		}
		return l.URL, l.TLSURL, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.advertise(b.url), b.advertise(b.tlsURL), nil
}

// Advertised returns a listener's URL (pulsar://, pulsar+ssl://, http://,
// https://) with its host replaced by the advertised address
// (WithAdvertisedAddress), as Pulsar names a broker in lookups, in the
// cluster's metadata and by its broker id; u itself without one.
func (b *Broker) Advertised(u string) string { return b.advertise(u) }

// advertise replaces the host of a listener URL with the advertised address.
func (b *Broker) advertise(u string) string {
	if u == "" || b.cfg.advertisedAddress == "" {
		return u
	}
	scheme, hostport, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	scheme += "://"
	_, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return u
	}
	if _, err := strconv.Atoi(port); err != nil {
		return u
	}
	return scheme + net.JoinHostPort(b.cfg.advertisedAddress, port)
}

// lookupFailed builds a failed LOOKUP_RESPONSE.
func lookupFailed(reqID uint64, code pb.ServerError, msg string) *pb.BaseCommand {
	return protocol.Base(pb.BaseCommand_LOOKUP_RESPONSE, &pb.CommandLookupTopicResponse{
		RequestId: proto.Uint64(reqID),
		Response:  pb.CommandLookupTopicResponse_Failed.Enum(),
		Error:     code.Enum(),
		Message:   proto.String(msg),
	})
}
