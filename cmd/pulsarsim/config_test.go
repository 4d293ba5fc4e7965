package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestConfigFileSetsTheFlagsTheCommandLineLeft(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.key")
	users := filepath.Join(dir, ".htpasswd")
	conf := filepath.Join(dir, "standalone.conf")
	must(t, os.WriteFile(secret, []byte("0123456789abcdef0123456789abcdef"), 0o600))
	must(t, os.WriteFile(users, []byte("admin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\n"), 0o600))
	must(t, os.WriteFile(conf, []byte(`# a comment
brokerServicePort=6650
brokerServicePortTls=6651
webServicePort=8080
bindAddress=127.0.0.2
advertisedAddress=localhost
maxMessageSize=1048576
authenticationEnabled=true
authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderTls,org.apache.pulsar.broker.authentication.AuthenticationProviderToken,org.apache.pulsar.broker.authentication.AuthenticationProviderBasic
tokenSecretKey=file://`+secret+`
basicAuthConf=`+users+`
anonymousUserRole=anonymous
authorizationEnabled=true
superUserRoles=localhost,superUser,admin
authenticationRefreshCheckSeconds=5
advertisedListeners=internal:pulsar://127.0.0.1:6650,internal:pulsar+ssl://127.0.0.1:6651
`), 0o600))
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:6650", "")
	fs.String("http", "127.0.0.1:8080", "")
	maxMsg := fs.Int("max-message-size", 5<<20, "")
	sec := addSecurityFlags(fs)
	must(t, fs.Parse([]string{"-addr", "127.0.0.1:7000"}))
	mustApply(t, fs, conf)

	if *addr != "127.0.0.1:7000" {
		t.Errorf("a flag given on the command line was overridden: %s", *addr)
	}
	if *sec.tlsAddr != "127.0.0.2:6651" || *maxMsg != 1048576 || *sec.advertised != "localhost" ||
		*sec.refresh != 5*time.Second || !*sec.authorization || *sec.superUsers != "localhost,superUser,admin" {
		t.Errorf("flags from the file: tls %s, max %d, advertised %s, refresh %v, authorization %v, super-users %s",
			*sec.tlsAddr, *maxMsg, *sec.advertised, *sec.refresh, *sec.authorization, *sec.superUsers)
	}
	a, err := sec.authenticator()
	if err != nil {
		t.Fatal(err)
	}
	if a.Token == nil || a.Basic == nil || !a.TLS || a.AnonymousRole != "anonymous" || !a.Basic.Check("admin", "123456") {
		t.Errorf("authenticator %+v", a)
	}
	l, err := parseListeners(*sec.listeners)
	if err != nil || l["internal"].URL != "pulsar://127.0.0.1:6650" || l["internal"].TLSURL != "pulsar+ssl://127.0.0.1:6651" {
		t.Errorf("listeners %+v, %v", l, err)
	}
	if _, err := sec.brokerOptions(); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownAuthenticationProviderIsRefused(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	sec := addSecurityFlags(fs)
	must(t, fs.Parse([]string{"-auth-providers", "org.example.AuthenticationProviderKerberos"}))
	if _, err := sec.brokerOptions(); err == nil {
		t.Fatal("an unknown provider was accepted")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestConfigFileSetsTheInactiveTopicSettings(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "standalone.conf")
	must(t, os.WriteFile(conf, []byte("brokerDeleteInactiveTopicsEnabled=false\n"+
		"brokerDeleteInactiveTopicsFrequencySeconds=30\n"+
		"brokerDeleteInactiveTopicsMaxInactiveDurationSeconds=90\n"+
		"brokerDeleteInactiveTopicsMode=delete_when_subscriptions_caught_up\n"), 0o600))
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	enabled := fs.Bool("delete-inactive-topics", true, "")
	freq := fs.Int("delete-inactive-topics-frequency", 60, "")
	maxInactive := fs.Int("delete-inactive-topics-max-inactive", 0, "")
	mode := fs.String("delete-inactive-topics-mode", "delete_when_no_subscriptions", "")
	must(t, fs.Parse(nil))
	mustApply(t, fs, conf)
	if *enabled || *freq != 30 || *maxInactive != 90 || *mode != "delete_when_subscriptions_caught_up" {
		t.Fatalf("enabled %v, frequency %d, max inactive %d, mode %s", *enabled, *freq, *maxInactive, *mode)
	}
}

func TestAnUnknownInactiveTopicModeIsRefused(t *testing.T) {
	err := run([]string{"-addr", "127.0.0.1:0", "-http", "", "-delete-inactive-topics-mode", "delete_when_bored"})
	if err == nil {
		t.Fatal("an unknown mode was accepted")
	}
}

func TestConfigFileSetsBrokerDeduplication(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "standalone.conf")
	must(t, os.WriteFile(conf, []byte("brokerDeduplicationEnabled=true\n"), 0o600))
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	dedup := fs.Bool("deduplication", false, "")
	must(t, fs.Parse(nil))
	mustApply(t, fs, conf)
	if !*dedup {
		t.Fatal("brokerDeduplicationEnabled=true left -deduplication off")
	}
}

func mustApply(t *testing.T, fs *flag.FlagSet, conf string) {
	t.Helper()
	if _, err := applyConfigFile(fs, conf); err != nil {
		t.Fatal(err)
	}
}

func TestConfigFileGivesTheWebSocketClientTheBrokerClientToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "admin-token")
	must(t, os.WriteFile(tokenFile, []byte("from-a-file\n"), 0o600))
	for _, c := range []struct{ plugin, params, want string }{
		{"org.apache.pulsar.client.impl.auth.AuthenticationToken", "token:abc.def.ghi", "abc.def.ghi"},
		{"org.apache.pulsar.client.impl.auth.AuthenticationToken", "file://" + tokenFile, "from-a-file"},
		{"org.apache.pulsar.client.impl.auth.AuthenticationTls", `{"tlsCertFile":"c.pem","tlsKeyFile":"k.pem"}`, ""},
	} {
		conf := filepath.Join(dir, "standalone.conf")
		must(t, os.WriteFile(conf, []byte("webSocketServiceEnabled=true\nbrokerClientAuthenticationPlugin="+c.plugin+
			"\nbrokerClientAuthenticationParameters="+c.params+"\n"), 0o600))
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		ws := fs.Bool("websocket", false, "")
		token := fs.String("websocket-token", "", "")
		must(t, fs.Parse(nil))
		mustApply(t, fs, conf)
		if !*ws || *token != c.want {
			t.Errorf("%s %s: websocket %v, token %q, want %q", c.plugin, c.params, *ws, *token, c.want)
		}
	}
}
