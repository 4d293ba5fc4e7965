package model_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pulsarsim/pulsarsim/model"
)

func TestATopicNameWithAnEmptyPartSaysSo(t *testing.T) {
	for _, name := range []string{"persistent://public/default/bad//name", "persistent://public//t", "public/default/", "persistent://public/default/t/"} {
		_, err := model.ParseTopicName(name)
		if !errors.Is(err, model.ErrInvalidName) || !strings.Contains(err.Error(), "empty") || strings.Contains(err.Error(), "cluster") {
			t.Errorf("ParseTopicName(%q): %v, want an invalid name with an empty part", name, err)
		}
	}
	// A v1 name, four parts none of them empty, is still refused as one.
	if _, err := model.ParseTopicName("persistent://public/standalone/default/t"); err == nil || !strings.Contains(err.Error(), "cluster") {
		t.Errorf("a v1 name: %v", err)
	}
}
