package model_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/model"
)

// A lower level's set fields win and its unset ones come from the level
// above; the result shares no pointer with either.
func TestPoliciesOrTakesUnsetFieldsFromTheFallback(t *testing.T) {
	topic := model.Policies{MaxProducersPerTopic: new(3)}
	ns := model.Policies{MaxProducersPerTopic: new(1), MessageTTLSeconds: new(60)}
	got := topic.Or(ns)
	want := model.Policies{MaxProducersPerTopic: new(3), MessageTTLSeconds: new(60)}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("topic.Or(namespace) (-want +got):\n%s", d)
	}
	*got.MessageTTLSeconds = 5
	if *ns.MessageTTLSeconds != 60 {
		t.Fatalf("changing the result changed the fallback: %d", *ns.MessageTTLSeconds)
	}
	if !(model.Policies{}).IsEmpty() || got.IsEmpty() {
		t.Fatal("IsEmpty: an empty value is empty, a resolved one is not")
	}
}

// Every default is in range, and an out-of-range value is refused with
// ErrInvalidPolicy.
func TestDefaultPoliciesValidateAndANegativeTTLDoesNot(t *testing.T) {
	if err := model.DefaultPolicies().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	err := model.ValidatePolicies(model.Policies{MessageTTLSeconds: new(-1)})
	if !errors.Is(err, model.ErrInvalidPolicy) {
		t.Fatalf("TTL -1: %v, want ErrInvalidPolicy", err)
	}
}
