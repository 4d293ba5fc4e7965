package scenarios_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/crypto"
	"github.com/google/go-cmp/cmp"

	"github.com/pulsarsim/pulsarsim/scenarios"
)

// The namespace and topic policies a standalone stores and serves (offload,
// persistence, subscribe rate, replication clusters, the deprecated schema
// auto-update strategy, encryption, subscription auth and permissions,
// anti-affinity, inactive topics), the namespace-wide clearBacklog and
// unsubscribe, and the topic's offload and internal-info, compared request
// by request with a real Pulsar 4.0.8.

// storedPolicyScript is what TestDifferentialStoredPolicies asks both
// brokers; {ns} is the run's namespace.
func storedPolicyScript() []adminStep {
	const nsp, tp = "/admin/v2/namespaces/{ns}/", "/admin/v2/persistent/{ns}/t/"
	const none, part, nons = "/admin/v2/persistent/{ns}/none/", "/admin/v2/persistent/{ns}/t-partition-0/",
		"/admin/v2/namespaces/{ns}-none/"
	steps := []adminStep{
		{"PUT", "/admin/v2/namespaces/{ns}", ""},
		{"PUT", "/admin/v2/persistent/{ns}/t", ""},
		{"PUT", tp + "subscription/keep", ""},
		{"PUT", tp + "subscription/gone", ""},
	}
	add := func(s ...adminStep) { steps = append(steps, s...) }
	get := func(p string) adminStep { return adminStep{"GET", p, ""} }
	// Offload thresholds and deletion lag: PUT, read -1 (or nothing) unset,
	// kept in the offload policies.
	for _, p := range []string{"offloadThreshold", "offloadThresholdInSeconds", "offloadDeletionLagMs"} {
		add(get(nsp+p), adminStep{"PUT", nsp + p, "100"}, get(nsp+p), adminStep{"PUT", nsp + p, "-5"}, get(nsp+p),
			adminStep{"PUT", nsp + p, "x"}, adminStep{"PUT", nsp + p, ""}, adminStep{"POST", nsp + p, "1"},
			adminStep{"PUT", nons + p, "100"}, get(nons+p), get(nsp+"offloadPolicies"))
	}
	add(adminStep{"DELETE", nsp + "offloadDeletionLagMs", ""}, get(nsp+"offloadDeletionLagMs"),
		get("/admin/v2/namespaces/{ns}"))
	// Offload policies, at both levels.
	const s3 = `{"managedLedgerOffloadDriver":"aws-s3","managedLedgerOffloadBucket":"b","managedLedgerOffloadRegion":"r","unknown":1}`
	for _, lvl := range []string{nsp, tp} {
		add(get(lvl+"offloadPolicies"), adminStep{"POST", lvl + "offloadPolicies", s3}, get(lvl+"offloadPolicies"),
			adminStep{"POST", lvl + "offloadPolicies", "{}"}, adminStep{"POST", lvl + "offloadPolicies", ""},
			adminStep{"POST", lvl + "offloadPolicies", "x"},
			adminStep{"POST", lvl + "offloadPolicies", `{"managedLedgerOffloadDriver":"aws-s3","s3ManagedLedgerOffloadBucket":"b",` +
				`"managedLedgerOffloadMaxThreads":4,"managedLedgerExtraConfigurations":{"k":"v"},"managedLedgerOffloadedReadPriority":"bookkeeper-first"}`},
			get(lvl+"offloadPolicies"), adminStep{"POST", lvl + "offloadPolicies", `{"managedLedgerOffloadMaxThreads":"x"}`},
			adminStep{"POST", lvl + "offloadPolicies", `{"managedLedgerOffloadDriver":"aws-s3"}`},
			adminStep{"POST", lvl + "offloadPolicies", `{"managedLedgerOffloadDriver":"google-cloud-storage","s3ManagedLedgerOffloadBucket":"b"}`},
			adminStep{"POST", lvl + "offloadPolicies", `{"managedLedgerOffloadDriver":"AWS-S3","managedLedgerOffloadBucket":"b","managedLedgerOffloadedReadPriority":"BOOKKEEPER_FIRST"}`},
			get(lvl+"offloadPolicies"),
			adminStep{"POST", lvl + "offloadPolicies", `{"managedLedgerOffloadDriver":"aliyun-oss","managedLedgerOffloadBucket":""}`},
			adminStep{"POST", lvl + "offloadPolicies", `{"managedLedgerOffloadDriver":"filesystem","managedLedgerOffloadThresholdInBytes":"10"}`},
			get(lvl+"offloadPolicies"), get(lvl+"offloadPolicies?applied=true"))
	}
	add(get("/admin/v2/namespaces/{ns}"), adminStep{"PUT", nsp + "offloadThreshold", "55"}, get(nsp+"offloadPolicies"),
		get(nsp+"offloadThreshold"), adminStep{"DELETE", nsp + "removeOffloadPolicies", ""}, get(nsp+"offloadPolicies"),
		get(nsp+"offloadThreshold"), adminStep{"DELETE", tp + "offloadPolicies", ""}, get(tp+"offloadPolicies"),
		adminStep{"DELETE", nons + "removeOffloadPolicies", ""}, get(none+"offloadPolicies"),
		adminStep{"POST", none + "offloadPolicies", s3}, get(part+"offloadPolicies"))
	// Persistence, with the quorum checks, at both levels.
	for _, lvl := range []string{nsp, tp} {
		add(get(lvl+"persistence"), get(lvl+"persistence?applied=true"))
		for _, b := range []string{
			`{"bookkeeperEnsemble":1,"bookkeeperWriteQuorum":1,"bookkeeperAckQuorum":1,"managedLedgerMaxMarkDeleteRate":2.5}`,
			`{"bookkeeperEnsemble":2,"bookkeeperWriteQuorum":1,"bookkeeperAckQuorum":1}`,
			`{"bookkeeperEnsemble":1,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":1}`,
			`{"bookkeeperEnsemble":1,"bookkeeperWriteQuorum":1,"bookkeeperAckQuorum":2}`,
			`{"bookkeeperEnsemble":0,"bookkeeperWriteQuorum":0,"bookkeeperAckQuorum":0}`,
			`{"bookkeeperEnsemble":6,"bookkeeperWriteQuorum":1,"bookkeeperAckQuorum":1}`,
			`{"bookkeeperEnsemble":3,"bookkeeperWriteQuorum":0,"bookkeeperAckQuorum":0}`,
			`{"bookkeeperEnsemble":3,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":0}`,
			`{"bookkeeperEnsemble":5,"bookkeeperWriteQuorum":6,"bookkeeperAckQuorum":1}`,
			`{"bookkeeperEnsemble":"2","bookkeeperWriteQuorum":"1","bookkeeperAckQuorum":"1","managedLedgerMaxMarkDeleteRate":"1.5"}`,
			`{"bookkeeperEnsemble":"a"}`, "{}", "", "x",
		} {
			add(adminStep{"POST", lvl + "persistence", b}, get(lvl+"persistence"))
		}
		add(get(lvl+"persistence?applied=true"), adminStep{"DELETE", lvl + "persistence", ""}, get(lvl+"persistence"))
	}
	const p111 = `{"bookkeeperEnsemble":1,"bookkeeperWriteQuorum":1,"bookkeeperAckQuorum":1}`
	const p121 = `{"bookkeeperEnsemble":1,"bookkeeperWriteQuorum":2,"bookkeeperAckQuorum":1}`
	add(get(none+"persistence"), adminStep{"POST", none + "persistence", p121}, adminStep{"POST", none + "persistence", ""},
		adminStep{"POST", part + "persistence", p111}, get(nons+"persistence"), adminStep{"POST", nons + "persistence", p111},
		adminStep{"POST", nons + "persistence", p121}, adminStep{"DELETE", nons + "persistence", ""},
		adminStep{"DELETE", none + "persistence", ""},
		adminStep{"POST", "/admin/v2/persistent/{ns}-none/t/persistence", p111})
	// Subscribe rate, at both levels.
	for _, lvl := range []string{nsp, tp} {
		add(get(lvl + "subscribeRate"))
		for _, b := range []string{`{"subscribeThrottlingRatePerConsumer":3,"ratePeriodInSecond":10}`, "{}",
			`{"subscribeThrottlingRatePerConsumer":-3}`, "", "x"} {
			add(adminStep{"POST", lvl + "subscribeRate", b}, get(lvl+"subscribeRate"))
		}
		add(adminStep{"POST", lvl + "subscribeRate", `{"subscribeThrottlingRatePerConsumer":4}`},
			get("/admin/v2/namespaces/{ns}"), get(lvl+"subscribeRate?applied=true"),
			adminStep{"DELETE", lvl + "subscribeRate", ""}, get(lvl+"subscribeRate"), get(lvl+"subscribeRate?applied=true"),
			adminStep{"PUT", lvl + "subscribeRate", "{}"})
	}
	add(adminStep{"POST", nons + "subscribeRate", "{}"}, get(nons+"subscribeRate"), adminStep{"DELETE", nons + "subscribeRate", ""},
		get(none+"subscribeRate"))
	// The deprecated auto-update strategy, encryption, subscription auth.
	const sa = "schemaAutoUpdateCompatibilityStrategy"
	add(get(nsp+sa), adminStep{"POST", nsp + sa, `"Full"`})
	for _, b := range []string{`"Full"`, `"BackwardTransitive"`, `"nope"`, "", `"Backward"`, "x", "2", "9"} {
		add(adminStep{"PUT", nsp + sa, b}, get(nsp+sa))
	}
	add(adminStep{"PUT", nons + sa, `"Full"`}, get(nons+sa))
	add(get(nsp+"encryptionRequired"), adminStep{"PUT", nsp + "encryptionRequired", "true"})
	for _, b := range []string{"true", "false", `"true"`, "x", ""} {
		add(adminStep{"POST", nsp + "encryptionRequired", b}, get(nsp+"encryptionRequired"))
	}
	add(adminStep{"POST", nons + "encryptionRequired", "true"}, get(nons+"encryptionRequired"))
	add(get(nsp+"subscriptionAuthMode"), adminStep{"PUT", nsp + "subscriptionAuthMode", `"Prefix"`})
	for _, b := range []string{`"Prefix"`, `"nope"`, `"Prefix"`, "", "1", `"None"`, "x"} {
		add(adminStep{"POST", nsp + "subscriptionAuthMode", b}, get(nsp+"subscriptionAuthMode"))
	}
	add(adminStep{"POST", nons + "subscriptionAuthMode", `"None"`}, get(nons+"subscriptionAuthMode"),
		adminStep{"POST", nsp + "encryptionRequired", "true"}, adminStep{"PUT", nsp + sa, `"Forward"`},
		adminStep{"POST", nsp + "subscriptionAuthMode", `"Prefix"`}, get("/admin/v2/namespaces/{ns}"))
	// Anti-affinity groups, kept apart from the namespace.
	add(get(nsp+"antiAffinity"), adminStep{"PUT", nsp + "antiAffinity", "g"})
	for _, b := range []string{"grp1", `"q"`, "", `{"a":1}`} {
		add(adminStep{"POST", nsp + "antiAffinity", b}, get(nsp+"antiAffinity"))
	}
	add(get("/admin/v2/namespaces/{ns}"), adminStep{"DELETE", nsp + "antiAffinity", ""}, get(nsp+"antiAffinity"),
		adminStep{"DELETE", nsp + "antiAffinity", ""}, get(nons+"antiAffinity"))
	// Replication clusters.
	for _, lvl := range []string{nsp, tp} {
		add(get(lvl + "replication"))
		for _, b := range []string{`["standalone"]`, `["nope"]`, "[]", "", "x", `"standalone"`, `["standalone","standalone"]`,
			`["global"]`, `[null]`, `["standalone","nope"]`, `["nope","global"]`} {
			add(adminStep{"POST", lvl + "replication", b}, get(lvl+"replication"))
		}
		add(get(lvl+"replication?applied=true"), adminStep{"PUT", lvl + "replication", `["standalone"]`})
	}
	add(adminStep{"DELETE", tp + "replication", ""}, get(tp+"replication"), get(tp+"replication?applied=true"),
		adminStep{"POST", nons + "replication", `["standalone"]`}, adminStep{"POST", nons + "replication", `["nope"]`},
		get(nons+"replication"), get(none+"replication"), adminStep{"POST", none + "replication", `["nope"]`},
		adminStep{"POST", none + "replication", "x"}, get(part+"replication"), get("/admin/v2/namespaces/{ns}"))
	// Inactive-topic policies, at both levels.
	for _, lvl := range []string{nsp, tp} {
		add(get(lvl + "inactiveTopicPolicies"))
		for _, b := range []string{
			`{"inactiveTopicDeleteMode":"delete_when_subscriptions_caught_up","maxInactiveDurationSeconds":120,"deleteWhileInactive":true}`,
			"{}", `{"inactiveTopicDeleteMode":"nope"}`, `{"maxInactiveDurationSeconds":-5}`, "", "x",
		} {
			add(adminStep{"POST", lvl + "inactiveTopicPolicies", b}, get(lvl+"inactiveTopicPolicies"))
		}
		add(adminStep{"POST", lvl + "inactiveTopicPolicies", `{"inactiveTopicDeleteMode":"delete_when_no_subscriptions","maxInactiveDurationSeconds":3600}`},
			get(lvl+"inactiveTopicPolicies?applied=true"), get("/admin/v2/namespaces/{ns}"),
			adminStep{"DELETE", lvl + "inactiveTopicPolicies", ""}, get(lvl+"inactiveTopicPolicies"))
	}
	add(adminStep{"POST", nons + "inactiveTopicPolicies", "{}"}, get(nons+"inactiveTopicPolicies"),
		adminStep{"DELETE", nons + "inactiveTopicPolicies", ""}, get(none+"inactiveTopicPolicies"))
	// Subscription permissions.
	const sp = nsp + "permissions/subscription"
	add(get(sp), adminStep{"POST", sp + "/s1", `["r1","r2"]`}, get(sp), adminStep{"POST", sp + "/s1", "[]"}, get(sp),
		adminStep{"POST", sp + "/s1", ""}, adminStep{"POST", sp + "/s1", "x"}, adminStep{"POST", sp + "/s1", `"r"`},
		adminStep{"POST", sp + "/s1", `["r1","r3"]`}, adminStep{"POST", sp + "/s2", `["r4"]`}, get(sp),
		get("/admin/v2/namespaces/{ns}"), adminStep{"PUT", sp + "/s1", `["r"]`},
		adminStep{"DELETE", nsp + "permissions/s1/r1", ""}, get(sp), adminStep{"DELETE", nsp + "permissions/s1/nobody", ""},
		adminStep{"DELETE", nsp + "permissions/nosub/r1", ""}, adminStep{"DELETE", nsp + "permissions/s1/r3", ""}, get(sp),
		get(nsp+"permissions"), adminStep{"POST", nons + "permissions/subscription/s1", `["r"]`},
		get(nons+"permissions/subscription"), adminStep{"DELETE", nons + "permissions/s1/r1", ""})
	// clearBacklog and unsubscribe across the namespace's topics.
	add(adminStep{"POST", nsp + "clearBacklog", ""}, adminStep{"POST", nsp + "clearBacklog/keep", ""},
		adminStep{"POST", nsp + "clearBacklog/nosuch", ""}, adminStep{"POST", nons + "clearBacklog", ""},
		adminStep{"POST", nons + "clearBacklog/keep", ""}, adminStep{"POST", nsp + "unsubscribe/gone", ""},
		get(tp+"subscriptions"), adminStep{"POST", nsp + "unsubscribe/nosuch", ""},
		adminStep{"POST", nons + "unsubscribe/keep", ""}, adminStep{"POST", nsp + "unsubscribe", ""})
	// Offload and its status, without tiered storage.
	add(get(tp+"offload"), adminStep{"PUT", tp + "offload", ""}, get(tp+"offload"),
		adminStep{"PUT", tp + "offload", `{"ledgerId":1,"entryId":0}`}, get(tp+"offload"),
		adminStep{"PUT", tp + "offload", "x"}, adminStep{"PUT", tp + "offload", "{}"}, get(none+"offload"),
		adminStep{"PUT", none + "offload", ""}, adminStep{"PUT", none + "offload", `{"ledgerId":1,"entryId":0}`},
		adminStep{"PUT", part + "offload", ""}, get("/admin/v2/persistent/{ns}-none/t/offload"))
	// internal-info's failures (its answer is compared by
	// TestDifferentialTopicInternalInfo).
	add(get(none+"internal-info"), get("/admin/v2/persistent/{ns}-none/t/internal-info"), get(part+"internal-info"),
		get("/admin/v2/non-persistent/{ns}/t/internal-info"))
	return steps
}

// TestDifferentialStoredPolicies sends storedPolicyScript to both brokers
// and compares the answers: statuses, reasons and bodies (the namespace's
// policies document by nsDocKeys).
func TestDifferentialStoredPolicies(t *testing.T) {
	oracleURL(t)
	realAdmin := oracleAdmin(t)
	sim := scenarios.SimTarget(t)
	ns := "public/" + strings.TrimPrefix(scenarios.RemoteTarget(t, "", "").Topic("spol"), "persistent://public/default/")
	run := func(base string) []string {
		out := runAdminStepsReasons(t, base, ns, storedPolicyScript(), true)
		for i, line := range out {
			out[i] = sortedRoles(t, line)
		}
		// The managed ledger's metadata of a topic with one subscription.
		return append(out, jsonNote(t, base, "/admin/v2/persistent/"+ns+"/t/internal-info", ns, internalInfoMask))
	}
	got := run(sim.Sim.AdminURL())
	want := run(realAdmin)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the answers differ (-real +pulsarsim):\n%s", diff)
	}
	t.Logf("%d answers, the same on both", len(got))
}

// sortedRoles sorts the role lists of a subscription permissions answer
// (or of a policies document's auth_policies) in line: Pulsar keeps them in
// sets, which it writes in its JVM's hash order.
func sortedRoles(t *testing.T, line string) string {
	head, body, ok := strings.Cut(line, " -> 200 ")
	if !ok || !strings.Contains(line, "permissions/subscription ") && !strings.HasPrefix(body, `{"auth_policies"`) {
		return line
	}
	var doc map[string]any
	if json.Unmarshal([]byte(body), &doc) != nil {
		return line
	}
	roles := doc
	if ap, ok := doc["auth_policies"].(map[string]any); ok {
		roles, _ = ap["subscription_auth_roles"].(map[string]any)
	}
	for sub, v := range roles {
		list, _ := v.([]any)
		sort.Slice(list, func(i, j int) bool { return fmt.Sprint(list[i]) < fmt.Sprint(list[j]) })
		roles[sub] = list
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return head + " -> 200 " + string(b)
}

// internalInfoMask masks what differs from broker to broker in a managed
// ledger's metadata: ledger ids, dates, metadata versions.
func internalInfoMask(v any, key string) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			x[k] = internalInfoMask(val, k)
		}
		return x
	case []any:
		for i, val := range x {
			x[i] = internalInfoMask(val, key)
		}
		return x
	case float64:
		switch key {
		case "ledgerId", "cursorsLedgerId", "timestamp", "version":
			if x >= 0 {
				return "N"
			}
		}
	case string:
		if strings.HasSuffix(key, "Date") {
			return "D"
		}
	}
	return v
}

// encryptionRequiredStory sets encryptionRequired on a namespace of its own
// and notes what pulsar-client-go producers get: one without encryption,
// one with an RSA key (pulsar-client-go v0.19.0 does not tell the broker it
// encrypts, so a broker that requires encryption refuses it too), then one
// without encryption once the policy is off.
func encryptionRequiredStory(t *testing.T, tg *scenarios.Target, admin string) []string {
	ns := "public/" + strings.TrimPrefix(tg.Topic("enc"), "persistent://public/default/")
	topic := "persistent://" + ns + "/t"
	steps := runAdminStepsReasons(t, admin, ns, []adminStep{
		{"PUT", "/admin/v2/namespaces/{ns}", ""},
		{"POST", "/admin/v2/namespaces/{ns}/encryptionRequired", "true"},
	}, true)
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPath, privPath := filepath.Join(dir, "pub.pem"), filepath.Join(dir, "priv.pem")
	if err := os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(privPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY",
		Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	client := tg.Client()
	produce := func(what string, opts pulsar.ProducerOptions) {
		opts.Topic, opts.SendTimeout = topic, 5*time.Second
		p, err := client.CreateProducer(opts)
		if err != nil {
			steps = append(steps, what+": "+strings.ReplaceAll(serverError(err), ns, "{ns}"))
			return
		}
		defer p.Close()
		_, err = p.Send(scenarios.Ctx(t), &pulsar.ProducerMessage{Payload: []byte("m")})
		steps = append(steps, fmt.Sprintf("%s: created, send error %v", what, err))
	}
	produce("without encryption", pulsar.ProducerOptions{})
	produce("with an RSA key", pulsar.ProducerOptions{Encryption: &pulsar.ProducerEncryptionInfo{
		KeyReader: crypto.NewFileKeyReader(pubPath, privPath), Keys: []string{"k"}}})
	steps = append(steps, runAdminStepsReasons(t, admin, ns, []adminStep{
		{"POST", "/admin/v2/namespaces/{ns}/encryptionRequired", "false"},
	}, true)...)
	produce("without encryption, the policy off", pulsar.ProducerOptions{})
	return steps
}

// serverError is the server's part of a pulsar-client-go error: its code
// and message, without the client's wording around them.
func serverError(err error) string {
	s := err.Error()
	if i := strings.Index(s, "server error: "); i >= 0 {
		return s[i+len("server error: "):]
	}
	return s
}

// TestDifferentialEncryptionRequired compares, through pulsar-client-go,
// what producers get on a namespace that requires encryption.
func TestDifferentialEncryptionRequired(t *testing.T) {
	sameStoryOnBoth(t, encryptionRequiredStory)
}

// TestEncryptionRequiredRefusesProducersThatDoNotSayTheyEncrypt runs the
// comparison's story on pulsarsim alone (it needs no oracle): a producer
// without encryption is refused while the policy is on, and created once it
// is off.
func TestEncryptionRequiredRefusesProducersThatDoNotSayTheyEncrypt(t *testing.T) {
	sim := scenarios.SimTarget(t)
	got := encryptionRequiredStory(t, sim, sim.Sim.AdminURL())
	want := []string{
		"without encryption: MetadataError: Encryption is required in persistent://{ns}/t",
		"without encryption, the policy off: created, send error <nil>",
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Fatalf("no %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
}
