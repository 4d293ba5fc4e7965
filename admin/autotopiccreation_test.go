package admin_test

import (
	"net/http"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// pulsaradmin sets a namespace's autoTopicCreation policy, a
// pulsar-client-go producer on a new topic of it then finds the policy's
// partitions, a partitioned type without a count is refused with a 412, and
// after the removal the broker's non-partitioned creation applies again.
func TestAutoTopicCreationPolicyThroughPulsaradminMakesPartitionedTopics(t *testing.T) {
	b, a, _ := startAdmin(t)
	client := newClient(t, b)
	ns, _ := utils.GetNamespaceName("public/default")
	three := 3
	if err := a.Namespaces().SetTopicAutoCreation(*ns, utils.TopicAutoCreationConfig{
		Allow: true, Type: utils.Partitioned, Partitions: &three}); err != nil {
		t.Fatal(err)
	}
	got, err := a.Namespaces().GetTopicAutoCreation(*ns)
	if err != nil || got == nil || !got.Allow || got.Type != utils.Partitioned || got.Partitions == nil || *got.Partitions != 3 {
		t.Fatalf("policy read back: %+v, %v", got, err)
	}
	producerPartitions := func(topic string) int {
		t.Helper()
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		p.Close()
		parts, err := client.TopicPartitions(topic)
		if err != nil {
			t.Fatal(err)
		}
		return len(parts)
	}
	if n := producerPartitions("new-partitioned"); n != 3 {
		t.Fatalf("a producer's new topic has %d partitions, want 3", n)
	}
	err = a.Namespaces().SetTopicAutoCreation(*ns, utils.TopicAutoCreationConfig{Allow: true, Type: utils.Partitioned})
	wantStatus(t, err, http.StatusPreconditionFailed)
	if err := a.Namespaces().RemoveTopicAutoCreation(*ns); err != nil {
		t.Fatal(err)
	}
	if n := producerPartitions("new-plain"); n != 1 {
		t.Fatalf("after the removal a new topic has %d partitions, want 1 (non-partitioned)", n)
	}
}
