package broker_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pulsarsim/pulsarsim/broker"
)

func TestATopicNameWithAnEmptyPartSaysSo(t *testing.T) {
	for _, name := range []string{"persistent://public/default/bad//name", "persistent://public//t", "public/default/", "persistent://public/default/t/"} {
		_, err := broker.ParseTopicName(name)
		if !errors.Is(err, broker.ErrInvalidName) || !strings.Contains(err.Error(), "empty") || strings.Contains(err.Error(), "cluster") {
			t.Errorf("ParseTopicName(%q): %v, want an invalid name with an empty part", name, err)
		}
	}
	// A v1 name, four parts none of them empty, is still refused as one.
	if _, err := broker.ParseTopicName("persistent://public/standalone/default/t"); err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Errorf("a v1 name: %v", err)
	}
}
