package scenarios_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// A namespace's autoTopicCreation policy: set, read and removed through the
// admin API with Pulsar's refusals, and applied when a client first uses a
// topic of the namespace.

// autoTopicCreationStory sets the policy of a fresh namespace in turn to
// what Pulsar refuses and to what it takes, and describes the answers and
// what pulsar-client-go producers meet on new topics.
func autoTopicCreationStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	ns := "public/" + strings.TrimPrefix(tg.Topic("atc"), "persistent://public/default/")
	path := admin + "/admin/v2/namespaces/" + ns + "/autoTopicCreation"
	var out []string
	call := func(method, body string) {
		status, answer := adminCall(t, method, path, body)
		out = append(out, fmt.Sprintf("%s %s -> %d %s", method, body, status, answer))
	}
	if status, answer := adminCall(t, "PUT", admin+"/admin/v2/namespaces/"+ns, ""); status != 204 {
		t.Fatalf("create namespace: %d %s", status, answer)
	}
	call("GET", "")
	for _, refused := range []string{
		`{"allowAutoTopicCreation":true,"topicType":"partitioned"}`,
		`{"allowAutoTopicCreation":true,"topicType":"partitioned","defaultNumPartitions":0}`,
		`{"allowAutoTopicCreation":true,"topicType":"partitioned","defaultNumPartitions":-2}`,
		`{"allowAutoTopicCreation":true,"topicType":"non-partitioned","defaultNumPartitions":2}`,
		`{"allowAutoTopicCreation":true,"topicType":"weird"}`,
		`{"allowAutoTopicCreation":true}`,
	} {
		call("POST", refused)
	}
	call("GET", "")
	client := tg.Client()
	produce := func(what, topic string) {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: "persistent://" + ns + "/" + topic})
		if err != nil {
			out = append(out, what+": "+strings.ReplaceAll(brokerPart(err), ns, "{ns}"))
			return
		}
		p.Close()
		parts, _ := client.TopicPartitions("persistent://" + ns + "/" + topic)
		out = append(out, fmt.Sprintf("%s: %d partitions", what, len(parts)))
	}
	call("POST", `{"allowAutoTopicCreation":true,"topicType":"partitioned","defaultNumPartitions":4}`)
	call("GET", "")
	produce("a producer on a new topic", "p4")
	call("POST", `{"allowAutoTopicCreation":false,"topicType":"weird"}`)
	call("GET", "")
	produce("a producer on a new topic", "off")
	produce("a producer on the partitioned topic", "p4")
	call("POST", `{"allowAutoTopicCreation":true,"topicType":"non-partitioned"}`)
	produce("a producer on a new topic", "np")
	call("DELETE", "")
	call("GET", "")
	call("POST", `{"allowAutoTopicCreation":false,"topicType":"partitioned","defaultNumPartitions":2}`)
	call("POST", "")
	call("GET", "")
	produce("a producer on a new topic", "back-to-the-broker")
	status, answer := adminCall(t, "GET", admin+"/admin/v2/namespaces/public/no-such-ns/autoTopicCreation", "")
	out = append(out, fmt.Sprintf("GET of a missing namespace -> %d %s", status, answer))
	return out
}

// TestDifferentialAutoTopicCreationPolicy compares the autoTopicCreation
// policy's answers and effects.
func TestDifferentialAutoTopicCreationPolicy(t *testing.T) {
	sameStoryOnBoth(t, autoTopicCreationStory)
}
