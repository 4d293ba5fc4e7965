package admin_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"

	"github.com/pulsarsim/pulsarsim/broker"
)

func TestSchemaPoliciesThroughPulsaradmin(t *testing.T) {
	_, a, _ := startAdmin(t)
	ns, _ := utils.GetNamespaceName("public/default")
	if s, err := a.Namespaces().GetSchemaCompatibilityStrategy(*ns); err != nil || s != utils.SchemaCompatibilityStrategyUndefined {
		t.Fatalf("default strategy %q, %v; want UNDEFINED (the broker's FULL applies)", s, err)
	}
	if err := a.Namespaces().SetSchemaCompatibilityStrategy(*ns, utils.SchemaCompatibilityStrategyBackwardTransitive); err != nil {
		t.Fatal(err)
	}
	if s, err := a.Namespaces().GetSchemaCompatibilityStrategy(*ns); err != nil || s != utils.SchemaCompatibilityStrategyBackwardTransitive {
		t.Fatalf("strategy %q, %v", s, err)
	}
	if v, err := a.Namespaces().GetSchemaValidationEnforced(*ns); err != nil || v {
		t.Fatalf("validation enforced %v, %v; want false", v, err)
	}
	if err := a.Namespaces().SetSchemaValidationEnforced(*ns, true); err != nil {
		t.Fatal(err)
	}
	if v, err := a.Namespaces().GetSchemaValidationEnforced(*ns); err != nil || !v {
		t.Fatalf("validation enforced %v, %v; want true", v, err)
	}
	if v, err := a.Namespaces().GetIsAllowAutoUpdateSchema(*ns); err != nil || !v {
		t.Fatalf("auto update %v, %v; want true", v, err)
	}
	if err := a.Namespaces().SetIsAllowAutoUpdateSchema(*ns, false); err != nil {
		t.Fatal(err)
	}
	pol, err := a.Namespaces().GetPolicies("public/default")
	if err != nil || pol.SchemaCompatibilityStrategy != utils.SchemaCompatibilityStrategyBackwardTransitive ||
		!pol.SchemaValidationEnforced || pol.IsAllowAutoUpdateSchema == nil || *pol.IsAllowAutoUpdateSchema {
		t.Fatalf("policies %+v, %v", pol, err)
	}
}

func TestTopicSchemaPoliciesOverTheNamespaces(t *testing.T) {
	b, _, base := startAdmin(t)
	const path = "/admin/v2/persistent/public/default/t/schemaCompatibilityStrategy"
	if err := b.CreateTopic("t"); err != nil {
		t.Fatal(err)
	}
	steps := []struct{ method, path, body, want string }{
		{"GET", path, "", "200 "},
		{"GET", path + "?applied=true", "", `200 "FULL"`},
		{"PUT", "/admin/v2/namespaces/public/default/schemaCompatibilityStrategy", `"FORWARD"`, "204 "},
		{"GET", path + "?applied=true", "", `200 "FORWARD"`},
		{"PUT", path, `3`, "204 "}, // an ordinal: BACKWARD
		{"GET", path, "", `200 "BACKWARD"`},
		{"PUT", path, `"NOT_A_STRATEGY"`, "204 "}, // unknown: UNDEFINED, so unset
		{"GET", path, "", "200 "},
		{"PUT", path, `"ALWAYS_COMPATIBLE"`, "204 "},
		{"DELETE", path, "", "204 "},
		{"GET", path + "?applied=true", "", `200 "FORWARD"`},
		{"GET", "/admin/v2/persistent/public/default/t/schemaValidationEnforced", "", "200 false"},
		{"POST", "/admin/v2/persistent/public/default/t/schemaValidationEnforced", `"TRUE"`, "204 "},
		{"GET", "/admin/v2/persistent/public/default/t/schemaValidationEnforced", "", "200 true"},
	}
	for _, s := range steps {
		status, body := call(t, base, s.method, s.path, s.body)
		if got := fmt.Sprintf("%d %s", status, jsonCompact(body)); got != s.want {
			t.Fatalf("%s %s %s: %s, want %s", s.method, s.path, s.body, got, s.want)
		}
	}
	applied, err := b.AppliedPolicies("t")
	if err != nil || *applied.SchemaCompatibilityStrategy != broker.SchemaForward || !*applied.SchemaValidationEnforced {
		t.Fatalf("applied %+v, %v", applied, err)
	}
}

func jsonCompact(b []byte) []byte {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	out, _ := json.Marshal(v)
	return out
}

// The admin API's compatibility check and version lookup, through
// pulsaradmin, agree with what a producer is then allowed.
func TestSchemaCompatibilityCheckThroughPulsaradmin(t *testing.T) {
	b, a, _ := startAdmin(t)
	const topic = "persistent://public/default/compat"
	v1 := `{"type":"record","name":"R","fields":[{"name":"a","type":"string"}]}`
	v2 := `{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"int"}]}`
	if err := a.Schemas().CreateSchemaByPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: v1}); err != nil {
		t.Fatal(err)
	}
	ok, err := a.Schemas().TestCompatibilityWithPostSchemaPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: v1})
	if err != nil || !ok.IsCompatibility || ok.SchemaCompatibilityStrategy != "FULL" {
		t.Fatalf("the same schema: %+v, %v", ok, err)
	}
	if _, err := a.Schemas().TestCompatibilityWithPostSchemaPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: v2}); err == nil {
		t.Fatal("an incompatible schema passes the check")
	}
	if v, err := a.Schemas().GetVersionByPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: v1}); err != nil || v != 0 {
		t.Fatalf("version of the first schema: %d, %v", v, err)
	}
	if v, err := a.Schemas().GetVersionByPayload(topic, utils.PostSchemaPayload{SchemaType: "AVRO", Schema: v2}); err != nil || v != -1 {
		t.Fatalf("version of an unknown schema: %d, %v", v, err)
	}
	c := newClient(t, b)
	p, err := c.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(v2, nil)})
	if err == nil {
		p.Close()
		t.Fatal("a producer with the schema the check refused was accepted")
	}
}
