package dockerapi

import (
	"maps"
	"testing"
)

// The images served are Pulsar's, by any registry and tag, and the
// reaper's; others are not.
func TestPulsarAndReaperImagesAreServedOthersAreNot(t *testing.T) {
	for image, want := range map[string]bool{
		"apachepulsar/pulsar":                        true,
		"apachepulsar/pulsar:4.0.8":                  true,
		"docker.io/apachepulsar/pulsar:latest":       true,
		"apachepulsar/pulsar-all:3.3.2":              true,
		"registry.example.com/apachepulsar/pulsar:4": true,
		"apachepulsar/pulsar@sha256:0123":            true,
		"testcontainers/ryuk:0.11.0":                 true,
		"redis:7":                                    false,
		"apachepulsar/pulsar-manager:v0.4.0":         false,
		"streamnative/pulsar:4.0":                    false,
	} {
		if got := (&Server{}).servedImage(image); got != want {
			t.Errorf("%s served: %v, want %v", image, got, want)
		}
	}
	if !(&Server{Images: []string{"streamnative/pulsar"}}).servedImage("streamnative/pulsar:4.0") {
		t.Error("an image named in Images is not served")
	}
}

// A container's environment sets the standalone.conf keys it names, as the
// image's apply-config-from-env.py does, and leaves the image's own
// variables out.
func TestEnvironmentBecomesStandaloneConf(t *testing.T) {
	got := confFromEnv([]string{
		"clusterName=standalone-0", "advertisedAddress=localhost",
		"advertisedListeners=external:pulsar://localhost:16650",
		"PULSAR_MEM=-Xmx512m", "PULSAR_PREFIX_brokerDeduplicationEnabled=true",
		"PATH=/usr/bin", "not a variable", "bad-key=1",
	})
	want := map[string]string{
		"clusterName": "standalone-0", "advertisedAddress": "localhost",
		"advertisedListeners": "external:pulsar://localhost:16650", "brokerDeduplicationEnabled": "true",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("conf %v, want %v", got, want)
	}
}

// Container list filters take both of Docker's JSON forms and match names,
// labels and states.
func TestListFiltersMatchNamesLabelsAndStates(t *testing.T) {
	c := &container{id: "abcdef0123", name: "pulsar-test", labels: map[string]string{"org.testcontainers": "true", "k": "v"}}
	for raw, want := range map[string]bool{
		`{"name":["pulsar-test"]}`:                    true,
		`{"name":{"pulsar-test":true}}`:               true,
		`{"name":["^/pulsar-test$"]}`:                 true,
		`{"name":["other"]}`:                          false,
		`{"label":["org.testcontainers=true","k=v"]}`: true,
		`{"label":["k=w"]}`:                           false,
		`{"label":["k"]}`:                             true,
		`{"status":["created"]}`:                      true,
		`{"status":["running"]}`:                      false,
		`{"id":["abcd"]}`:                             true,
	} {
		if got := parseFilters(raw).matches(c); got != want {
			t.Errorf("%s matches: %v, want %v", raw, got, want)
		}
	}
}
