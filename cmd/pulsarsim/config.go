package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/issuer"
)

// securityFlags are the TLS, authentication, authorization and listener
// settings, each also readable from a Pulsar standalone.conf given with
// -config.
type securityFlags struct {
	tlsAddr, httpsAddr, cert, key, trust *string
	requireClientCert                    *bool
	advertised, listeners                *string
	providers, secretKey, publicKey      *string
	roleClaim, htpasswd, anonymous       *string
	authorization                        *bool
	superUsers                           *string
	refresh                              *time.Duration
	oauth2Clients                        *string
}

func addSecurityFlags(fs *flag.FlagSet) *securityFlags {
	return &securityFlags{
		tlsAddr:           fs.String("tls-addr", "127.0.0.1:6651", "address of the pulsar+ssl:// listener, served when -tls-cert is given"),
		httpsAddr:         fs.String("https", "127.0.0.1:8443", "address of the https:// admin API, served when -tls-cert is given and -http is not empty"),
		cert:              fs.String("tls-cert", "", "server certificate, PEM (tlsCertificateFilePath)"),
		key:               fs.String("tls-key", "", "server private key, PEM (tlsKeyFilePath)"),
		trust:             fs.String("tls-trust", "", "CA certificates that sign client certificates, PEM (tlsTrustCertsFilePath)"),
		requireClientCert: fs.Bool("tls-require-client-cert", false, "refuse TLS clients without a trusted certificate (tlsRequireTrustedClientCertOnConnect)"),
		advertised:        fs.String("advertised-address", "", "host name that lookups return (advertisedAddress; default: the listening address)"),
		listeners:         fs.String("advertised-listeners", "", "named listeners, name:pulsar://host:port,name:pulsar+ssl://host:port (advertisedListeners)"),
		providers:         fs.String("auth-providers", "", "authentication providers, comma-separated: token, basic, tls (authenticationProviders; empty: authentication off)"),
		secretKey:         fs.String("token-secret-key", "", "HS256 key for tokens: a file, file:///path or data:;base64,… (tokenSecretKey)"),
		publicKey:         fs.String("token-public-key", "", "RSA or EC public key for tokens: a file, file:///path or data:;base64,… (tokenPublicKey)"),
		roleClaim:         fs.String("token-role-claim", "sub", "token claim that names the role (tokenAuthClaim)"),
		htpasswd:          fs.String("htpasswd", "", "users for basic authentication, an htpasswd file (basicAuthConf)"),
		anonymous:         fs.String("anonymous-role", "", "role of clients without credentials (anonymousUserRole; empty: refuse them)"),
		authorization:     fs.Bool("authorization", false, "enforce permissions (authorizationEnabled)"),
		superUsers:        fs.String("superusers", "", "super-user roles, comma-separated (superUserRoles)"),
		oauth2Clients:     fs.String("oauth2-clients", "", "serve an OAuth2 issuer on the HTTP side for these clients, id:secret[:role] comma-separated (needs -token-secret-key)"),
		refresh:           fs.Duration("auth-refresh", 60*time.Second, "how often expired credentials are challenged (authenticationRefreshCheckSeconds)"),
	}
}

// confFlags maps the standalone.conf keys pulsarsim honours to its flags.
var confFlags = map[string]string{
	"clusterName":                                          "cluster-name",
	"clusterMigrationCheckDurationSeconds":                 "cluster-migration-check-seconds",
	"advertisedAddress":                                    "advertised-address",
	"advertisedListeners":                                  "advertised-listeners",
	"maxMessageSize":                                       "max-message-size",
	"webSocketServiceEnabled":                              "websocket",
	"webSocketPingDurationSeconds":                         "websocket-ping-seconds",
	"webSocketSessionIdleTimeoutMillis":                    "websocket-idle-timeout-ms",
	"webSocketMaxTextFrameSize":                            "websocket-max-text-frame-size",
	"allowAutoTopicCreation":                               "auto-create-topics",
	"allowAutoTopicCreationType":                           "auto-topic-creation-type",
	"defaultNumPartitions":                                 "default-num-partitions",
	"maxNumPartitionsPerPartitionedTopic":                  "max-partitions-per-topic",
	"subscriptionKeySharedUseConsistentHashing":            "key-shared-consistent-hashing",
	"acknowledgmentAtBatchIndexLevelEnabled":               "batch-index-ack",
	"transactionCoordinatorEnabled":                        "transactions",
	"maxActiveTransactionsPerCoordinator":                  "max-active-transactions",
	"tlsCertificateFilePath":                               "tls-cert",
	"tlsKeyFilePath":                                       "tls-key",
	"tlsTrustCertsFilePath":                                "tls-trust",
	"tlsRequireTrustedClientCertOnConnect":                 "tls-require-client-cert",
	"tokenSecretKey":                                       "token-secret-key",
	"tokenPublicKey":                                       "token-public-key",
	"tokenAuthClaim":                                       "token-role-claim",
	"basicAuthConf":                                        "htpasswd",
	"anonymousUserRole":                                    "anonymous-role",
	"authorizationEnabled":                                 "authorization",
	"superUserRoles":                                       "superusers",
	"preciseTimeBasedBacklogQuotaCheck":                    "precise-backlog-quota-check",
	"backlogQuotaDefaultLimitBytes":                        "backlog-quota-default-limit-bytes",
	"backlogQuotaDefaultLimitSecond":                       "backlog-quota-default-limit-seconds",
	"backlogQuotaDefaultRetentionPolicy":                   "backlog-quota-default-policy",
	"brokerDeleteInactiveTopicsEnabled":                    "delete-inactive-topics",
	"brokerDeleteInactiveTopicsFrequencySeconds":           "delete-inactive-topics-frequency",
	"brokerDeleteInactiveTopicsMaxInactiveDurationSeconds": "delete-inactive-topics-max-inactive",
	"brokerDeleteInactiveTopicsMode":                       "delete-inactive-topics-mode",
	"brokerDeduplicationEnabled":                           "deduplication",
	"loadManagerClassName":                                 "load-manager",
	"isSchemaValidationEnforced":                           "schema-validation-enforced",
	"brokerEntryMetadataInterceptors":                      "broker-entry-metadata-interceptors",
	"exposingBrokerEntryMetadataToClientEnabled":           "expose-broker-entry-metadata",
}

// confKeys are the standalone.conf keys applyConfigFile reads besides
// those of confFlags.
var confKeys = []string{"bindAddress", "brokerServicePort", "brokerServicePortTls", "webServicePort",
	"webServicePortTls", "authenticationEnabled", "authenticationProviders", "authenticationRefreshCheckSeconds",
	"backlogQuotaCheckIntervalInSeconds", "backlogQuotaCheckEnabled", "backlogQuotaDefaultLimitGB"}

// applyConfigFile reads a Pulsar standalone.conf and sets every flag it
// covers that the command line did not set. The listener ports combine with
// bindAddress (pulsarsim's default bind address stays 127.0.0.1). As Pulsar
// does, it skips the keys it does not know, and returns those that have a
// value, sorted, for the caller to say so; a line that is not key=value,
// or a value its flag refuses, is an error naming the line or key.
func applyConfigFile(fs *flag.FlagSet, path string) (ignored []string, err error) {
	conf, err := readConf(path)
	if err != nil {
		return nil, err
	}
	explicit := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = true })
	set := func(key, name, value string) error {
		if explicit[name] || fs.Lookup(name) == nil {
			return nil
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s: %s=%s: %w", path, key, value, err)
		}
		return nil
	}
	for key, v := range conf {
		if _, known := confFlags[key]; !known && !slices.Contains(confKeys, key) && v != "" {
			ignored = append(ignored, key)
		}
	}
	slices.Sort(ignored)
	bind := conf["bindAddress"]
	if bind == "" {
		bind = "127.0.0.1"
	}
	for key, name := range map[string]string{"brokerServicePort": "addr", "brokerServicePortTls": "tls-addr",
		"webServicePort": "http", "webServicePortTls": "https"} {
		if port := conf[key]; port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
				return nil, fmt.Errorf("%s: %s=%s: not a port number (0 to 65535)", path, key, port)
			}
			if err := set(key, name, net.JoinHostPort(bind, port)); err != nil {
				return nil, err
			}
		}
	}
	for key, name := range confFlags {
		if v, ok := conf[key]; ok && v != "" {
			if err := set(key, name, v); err != nil {
				return nil, err
			}
		}
	}
	if err := applyQuotaConf(conf, set); err != nil {
		return nil, err
	}
	if token := brokerClientToken(conf); token != "" {
		if err := set("brokerClientAuthenticationParameters", "websocket-token", token); err != nil {
			return nil, err
		}
	}
	if secs := conf["authenticationRefreshCheckSeconds"]; secs != "" {
		if err := set("authenticationRefreshCheckSeconds", "auth-refresh", secs+"s"); err != nil {
			return nil, err
		}
	}
	if conf["authenticationEnabled"] == "true" {
		if err := set("authenticationProviders", "auth-providers", conf["authenticationProviders"]); err != nil {
			return nil, err
		}
	}
	return ignored, nil
}

// brokerClientToken returns the token of the brokerClient* keys when they
// name the token plugin ("token:..." or "file:///path" parameters), which
// the WebSocket API's internal client presents as Pulsar's websocket
// service does; "" for none or another plugin.
func brokerClientToken(conf map[string]string) string {
	if !strings.HasSuffix(conf["brokerClientAuthenticationPlugin"], "AuthenticationToken") {
		return ""
	}
	params := conf["brokerClientAuthenticationParameters"]
	switch {
	case strings.HasPrefix(params, "token:"):
		return strings.TrimPrefix(params, "token:")
	case strings.HasPrefix(params, "file://"):
		data, err := os.ReadFile(strings.TrimPrefix(params, "file://"))
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(data))
	}
	return ""
}

// readConf parses key=value lines; a line starting with '#' is a comment,
// and any other line without '=' or with an empty key is refused, with its
// number.
func readConf(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	conf := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if k = strings.TrimSpace(k); !ok || k == "" {
			return nil, fmt.Errorf("%s:%d: %q is not a key=value line", path, n, line)
		}
		conf[k] = strings.TrimSpace(v)
	}
	return conf, sc.Err()
}

// tlsConfig is the server TLS configuration, or nil without a certificate.
func (s *securityFlags) tlsConfig() (*tls.Config, error) {
	if *s.cert == "" {
		return nil, nil
	}
	pair, err := tls.LoadX509KeyPair(*s.cert, *s.key)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.VerifyClientCertIfGiven}
	if *s.trust != "" {
		pem, err := os.ReadFile(*s.trust)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = x509.NewCertPool()
		if !cfg.ClientCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no certificate found", *s.trust)
		}
	}
	if *s.requireClientCert {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// brokerOptions turns the settings into broker options.
func (s *securityFlags) brokerOptions() ([]broker.Option, error) {
	var opts []broker.Option
	if *s.advertised != "" {
		opts = append(opts, broker.WithAdvertisedAddress(*s.advertised))
	}
	if *s.listeners != "" {
		l, err := parseListeners(*s.listeners)
		if err != nil {
			return nil, err
		}
		opts = append(opts, broker.WithAdvertisedListeners(l))
	}
	if *s.providers != "" {
		a, err := s.authenticator()
		if err != nil {
			return nil, err
		}
		opts = append(opts, broker.WithAuthentication(a), broker.WithAuthRefreshInterval(*s.refresh))
	}
	if *s.authorization {
		opts = append(opts, broker.WithAuthorization(splitList(*s.superUsers)...))
	}
	return opts, nil
}

func (s *securityFlags) authenticator() (*auth.Authenticator, error) {
	a := &auth.Authenticator{AnonymousRole: *s.anonymous}
	for _, p := range splitList(*s.providers) {
		// Pulsar names providers by class: ...AuthenticationProviderToken.
		name := strings.ToLower(p[strings.LastIndex(p, ".")+1:])
		switch strings.TrimPrefix(name, "authenticationprovider") {
		case "token":
			v := &auth.TokenVerifier{RoleClaim: *s.roleClaim}
			switch {
			case *s.secretKey != "":
				data, err := readKey(*s.secretKey)
				if err == nil {
					v.Secret, err = auth.DecodeSecretKey(data)
				}
				if err != nil {
					return nil, fmt.Errorf("token secret key: %w", err)
				}
			case *s.publicKey != "":
				data, err := readKey(*s.publicKey)
				if err == nil {
					v.PublicKey, err = auth.DecodePublicKey(data)
				}
				if err != nil {
					return nil, fmt.Errorf("token public key: %w", err)
				}
			default:
				return nil, errors.New("the token provider needs -token-secret-key or -token-public-key")
			}
			a.Token = v
		case "basic":
			data, err := os.ReadFile(strings.TrimPrefix(*s.htpasswd, "file://"))
			if err != nil {
				return nil, fmt.Errorf("basic provider: %w", err)
			}
			if a.Basic, err = auth.ParseHtpasswd(data); err != nil {
				return nil, err
			}
		case "tls":
			a.TLS = true
		default:
			return nil, fmt.Errorf("unknown authentication provider %q", p)
		}
	}
	return a, nil
}

// readKey reads a key setting as Pulsar does: inline after "data:", else a
// file (with or without a file:// prefix).
func readKey(v string) ([]byte, error) {
	if strings.HasPrefix(v, "data:") {
		return []byte(v), nil
	}
	return os.ReadFile(strings.TrimPrefix(v, "file://"))
}

// parseListeners reads advertisedListeners: name:url pairs, comma-separated.
func parseListeners(v string) (map[string]broker.AdvertisedListener, error) {
	out := map[string]broker.AdvertisedListener{}
	for _, item := range splitList(v) {
		name, url, ok := strings.Cut(item, ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("advertised listener %q: want name:url", item)
		}
		l := out[name]
		switch {
		case strings.HasPrefix(url, "pulsar+ssl://"):
			l.TLSURL = url
		case strings.HasPrefix(url, "pulsar://"):
			l.URL = url
		default:
			return nil, fmt.Errorf("advertised listener %q: the URL must be pulsar:// or pulsar+ssl://", item)
		}
		out[name] = l
	}
	return out, nil
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// httpHandler wraps the admin handler with the OAuth2 issuer when
// -oauth2-clients names clients: its discovery document and token endpoint
// sit beside the admin API, and its tokens are signed with the token
// provider's secret key.
func (s *securityFlags) httpHandler(admin http.Handler) (http.Handler, error) {
	if *s.oauth2Clients == "" {
		return admin, nil
	}
	if *s.secretKey == "" {
		return nil, errors.New("-oauth2-clients needs -token-secret-key: the issuer signs with it")
	}
	data, err := readKey(*s.secretKey)
	if err != nil {
		return nil, err
	}
	secret, err := auth.DecodeSecretKey(data)
	if err != nil {
		return nil, err
	}
	iss := &issuer.Issuer{Key: secret}
	for _, c := range splitList(*s.oauth2Clients) {
		parts := strings.SplitN(c, ":", 3)
		if len(parts) < 2 || parts[0] == "" {
			return nil, fmt.Errorf("OAuth2 client %q: want id:secret[:role]", c)
		}
		role := ""
		if len(parts) == 3 {
			role = parts[2]
		}
		iss.AddClient(parts[0], issuer.Client{Secret: parts[1], Role: role})
	}
	mux := http.NewServeMux()
	mux.Handle(issuer.DiscoveryPath, iss)
	mux.Handle(issuer.TokenPath, iss)
	mux.Handle("/", admin)
	return mux, nil
}
