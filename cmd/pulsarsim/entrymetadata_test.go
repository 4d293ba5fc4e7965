package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/pulsarsim/pulsarsim/broker"
)

func TestConfigFileSetsBrokerEntryMetadata(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "standalone.conf")
	must(t, os.WriteFile(conf, []byte("brokerEntryMetadataInterceptors="+broker.BrokerTimestampInterceptor+","+
		broker.IndexInterceptor+"\nexposingBrokerEntryMetadataToClientEnabled=true\n"), 0o600))
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	interceptors := fs.String("broker-entry-metadata-interceptors", "", "")
	expose := fs.Bool("expose-broker-entry-metadata", false, "")
	must(t, fs.Parse(nil))
	if _, err := applyConfigFile(fs, conf); err != nil {
		t.Fatal(err)
	}
	ts, index, err := broker.ParseBrokerEntryMetadataInterceptors(*interceptors)
	if err != nil || !ts || !index || !*expose {
		t.Fatalf("interceptors %q (timestamp %v, index %v, %v), expose %v: want both, exposed", *interceptors, ts, index, err, *expose)
	}
	if _, _, err := broker.ParseBrokerEntryMetadataInterceptors("org.example.Unknown"); err == nil {
		t.Fatal("an unknown interceptor class was accepted; Pulsar does not start with one")
	}
}
