package scenarios_test

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"testing"
)

// A bundle split on a cluster of two brokers compared with a real one
// (cluster_differential_test.go has the sides): the refusals of bad
// requests, the redirect from the broker that does not own the bundle, the
// bundles and the policies' bundles after a split at the owner, who owns
// the halves and answers their lookups, the algorithms that find nowhere to
// split, a split by topic count and at given positions, a bundle too narrow
// to split, and an unload of the halves.

// topicsInRange returns n topics of ns whose hashes fall in [lo, hi), by
// ascending hash.
func topicsInRange(ns string, lo, hi uint32, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		full := fmt.Sprintf("persistent://%s/t%d", ns, i)
		if h := crc32.ChecksumIEEE([]byte(full)); h >= lo && h < hi {
			out = append(out, full)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return crc32.ChecksumIEEE([]byte(out[i])) < crc32.ChecksumIEEE([]byte(out[j]))
	})
	return out
}

// reasonOf is an admin answer's status and reason, its first line for a
// 500 (the rest is a Java stack), ns replaced by <ns>.
func reasonOf(status int, body, ns string) string {
	var r struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal([]byte(body), &r) == nil && r.Reason != "" {
		body = r.Reason
	}
	if status == http.StatusInternalServerError {
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "Message: ") {
				body = line
			}
		}
	}
	return fmt.Sprintf("%d %s", status, strings.ReplaceAll(body, ns, "<ns>"))
}

// ownedHalves says which of bundles broker i lists as its own.
func ownedHalves(t *testing.T, side *clusterSide, i int, ns string, bundles []string) string {
	t.Helper()
	status, body := adminCall(t, "GET", side.admins[i]+"/admin/v2/brokers/cluster-a/"+side.id(i)+"/ownedNamespaces", "")
	if status != http.StatusOK {
		// pulsarsim names its cluster standalone.
		status, body = adminCall(t, "GET", side.admins[i]+"/admin/v2/brokers/standalone/"+side.id(i)+"/ownedNamespaces", "")
	}
	var owned map[string]any
	if status != http.StatusOK || json.Unmarshal([]byte(body), &owned) != nil {
		t.Fatalf("owned namespaces of broker %d: %d %s", i, status, body)
	}
	var out []string
	for _, bd := range bundles {
		_, ok := owned[ns+"/"+bd]
		out = append(out, fmt.Sprintf("%s=%v", bd, ok))
	}
	return strings.Join(out, " ")
}

func splitStory(t *testing.T, side *clusterSide) []string {
	// Pulsar creates the namespace's __change_events topic when its first
	// topic is loaded, and the split algorithms that count topics count it:
	// the namespace is one whose __change_events falls in its second
	// bundle, which the story does not split.
	var ns string
	for ns == "" || crc32.ChecksumIEEE([]byte("persistent://"+ns+"/__change_events")) < 0x80000000 {
		ns = fmt.Sprintf("public/split-%x", rand.Uint64())
	}
	admin := side.admins[side.leader]
	var out []string
	note := func(what string, status int, body string) {
		out = append(out, what+": "+reasonOf(status, body, ns))
	}
	status, body := adminCall(t, "PUT", admin+"/admin/v2/namespaces/"+ns, `{"bundles":{"numBundles":2}}`)
	note("create with two bundles", status, body)
	bundles := func(i int) string {
		_, body := adminCall(t, "GET", side.admins[i]+"/admin/v2/namespaces/"+ns+"/bundles", "")
		return body
	}
	policyBundles := func() string {
		_, body := adminCall(t, "GET", admin+"/admin/v2/namespaces/"+ns, "")
		var doc map[string]any
		if json.Unmarshal([]byte(body), &doc) != nil {
			return body
		}
		canon, _ := json.Marshal(doc["bundles"])
		return string(canon)
	}
	out = append(out, "bundles: "+bundles(0), "policies' bundles: "+policyBundles())
	split := func(at int, bundle, query, body string) (int, string) {
		return adminCall(t, "PUT", side.admins[at]+"/admin/v2/namespaces/"+ns+"/"+bundle+"/split"+query, body)
	}

	// Bad requests, refused wherever they arrive.
	for _, c := range []struct{ ns, bundle, query, body string }{
		{ns, "LARGEST", "", ""},
		{ns, "HOT", "", ""},
		{ns, "0x00000000_0x80000000", "?splitAlgorithmName=nope", ""},
		{ns, "0x00000000_0x80000000", "?splitAlgorithmName=specified_positions_divide", ""},
		{ns, "0x00000000_0x80000000", "?splitAlgorithmName=specified_positions_divide", "[]"},
		{"public/none-" + ns[len("public/"):], "0x00000000_0x80000000", "", ""},
		{ns, "0x00000000_0x40000000", "", ""},
		{ns, "0x00000001_0x80000000", "", ""},
		{ns, "zz", "", ""},
		{ns, "0xzz_0x80000000", "", ""},
		{ns, "0x80000000_0x00000000", "", ""},
	} {
		for _, i := range []int{side.leader, 1 - side.leader} {
			status, body := adminCall(t, "PUT", side.admins[i]+"/admin/v2/namespaces/"+c.ns+"/"+c.bundle+"/split"+c.query, c.body)
			note(fmt.Sprintf("split %s%s %s at %s", c.bundle, c.query, c.body, side.leaderRole(i)), status, body)
		}
	}

	// The first half gets an owner; asked of the other broker, a split goes
	// to it, authoritative when the broker redirecting leads.
	low := topicsInRange(ns, 0, 0x40000000, 2)
	high := topicsInRange(ns, 0x40000000, 0x80000000, 1)
	w := dialCluster(t, side)
	_, owner := w.assign(low[0])
	other := 1 - owner
	status, loc := noRedirectCall(t, "PUT", side.admins[other]+"/admin/v2/namespaces/"+ns+"/0x00000000_0x80000000/split")
	// Pulsar's isLeaderBroker: whether the broker leads, always with the
	// extensible load manager.
	loc = strings.NewReplacer("?authoritative="+fmt.Sprint(other == side.leader || side.extensible), "?authoritative=<whether it leads>").
		Replace(strings.ReplaceAll(loc, ns, "<ns>"))
	out = append(out, fmt.Sprintf("split at the other broker: %d %s", status,
		side.mask(loc, func(j int) string { return ownerRole(j, owner) })))

	// At the owner: two halves, both its own.
	status, body = split(owner, "0x00000000_0x80000000", "", "")
	note("split at the owner", status, body)
	want := `{"boundaries":["0x00000000","0x40000000","0x80000000","0xffffffff"],"numBundles":3}`
	out = append(out, "bundles at the owner: "+bundles(owner), "policies' bundles: "+policyBundles(),
		fmt.Sprintf("the other broker's bundles become the same: %v", eventually(func() bool { return bundles(other) == want })))
	halves := []string{"0x00000000_0x40000000", "0x40000000_0x80000000"}
	for _, i := range []int{owner, other} {
		out = append(out, "owned by "+ownerRole(i, owner)+": "+ownedHalves(t, side, i, ns, halves))
	}
	for k, topic := range []string{low[0], high[0]} {
		for _, i := range []int{owner, other} {
			a := w.lookup(i, topic, false)
			out = append(out, fmt.Sprintf("LOOKUP of a topic of half %s at %s: %s", halves[k], ownerRole(i, owner),
				describeLookup(a, side.index(a.GetBrokerServiceUrl()), owner)))
		}
		_, bd := adminCall(t, "GET", side.admins[other]+"/lookup/v2/topic/persistent/"+strings.TrimPrefix(topic, "persistent://")+"/bundle", "")
		out = append(out, "its bundle, asked of the other broker: "+bd)
	}

	// The algorithms that need two topics leave a bundle of one as it is.
	status, body = adminCall(t, "PUT", side.admins[owner]+"/admin/v2/persistent/"+strings.TrimPrefix(low[0], "persistent://"), "")
	note("create a topic of the first half", status, body)
	status, body = split(owner, halves[0], "?splitAlgorithmName=topic_count_equally_divide", "")
	note("split by topic count, one topic", status, body)
	status, body = split(owner, halves[0], "?splitAlgorithmName=specified_positions_divide", "[268435456]")
	note("split at 0x10000000, one topic", status, body)
	out = append(out, "bundles: "+bundles(owner))
	// With two, by topic count: between their hashes.
	status, body = adminCall(t, "PUT", side.admins[owner]+"/admin/v2/persistent/"+strings.TrimPrefix(low[1], "persistent://"), "")
	note("create a second topic there", status, body)
	// The first half holds both, the last bundle the namespace's
	// __change_events: the first half is the largest.
	status, body = split(owner, "LARGEST", "?splitAlgorithmName=topic_count_equally_divide", "")
	note("split LARGEST by topic count, two topics", status, body)
	h0, h1 := crc32.ChecksumIEEE([]byte(low[0])), crc32.ChecksumIEEE([]byte(low[1]))
	mid := h0 + (h1-h0)/2
	var list struct {
		Boundaries []string `json:"boundaries"`
	}
	json.Unmarshal([]byte(bundles(owner)), &list)
	out = append(out, fmt.Sprintf("the boundaries: %d, one halfway between the two topics' hashes: %v", len(list.Boundaries),
		strings.Contains(strings.Join(list.Boundaries, ","), fmt.Sprintf("0x00000000,0x%08x,0x40000000", mid))))
	// At given positions, those inside: the lower half holds low[0]; a
	// position one past its lower end leaves a bundle of range 1, which
	// cannot be split.
	first := fmt.Sprintf("0x00000000_0x%08x", mid)
	masked := func(s string) string { return strings.ReplaceAll(s, fmt.Sprintf("0x%08x", mid), "<mid>") }
	for _, topic := range topicsInRange(ns, 0, mid, 2) {
		if topic != low[0] {
			status, body = adminCall(t, "PUT", side.admins[owner]+"/admin/v2/persistent/"+strings.TrimPrefix(topic, "persistent://"), "")
			note("create another topic of the lowest bundle", status, body)
			break
		}
	}
	status, body = split(owner, first, "?splitAlgorithmName=specified_positions_divide", "[1, 99999999999, -5]")
	note("split the lowest bundle at 1 (and two positions outside)", status, body)
	json.Unmarshal([]byte(bundles(owner)), &list)
	out = append(out, "the first boundaries: "+masked(strings.Join(list.Boundaries[:3], ",")))
	status, body = split(owner, "0x00000000_0x00000001", "", "")
	note("split 0x00000000_0x00000001", status, masked(body))
	status, body = split(owner, halves[1], "?splitAlgorithmName=flow_or_qps_equally_divide", "")
	note("split by flow or qps", status, body)

	// With unload the halves are given up (with the modular load manager;
	// the extensible one ignores unload).
	status, body = split(owner, halves[1], "?unload=true", "")
	note("split the second half with unload", status, body)
	quarters := []string{"0x40000000_0x60000000", "0x60000000_0x80000000"}
	if side.extensible {
		kept := eventually(func() bool {
			return ownedHalves(t, side, owner, ns, quarters) == quarters[0]+"=true "+quarters[1]+"=true"
		})
		out = append(out, fmt.Sprintf("its quarters stay with the owner: %v", kept))
	} else {
		freed := eventually(func() bool {
			return ownedHalves(t, side, owner, ns, quarters) == quarters[0]+"=false "+quarters[1]+"=false"
		})
		out = append(out, fmt.Sprintf("its quarters are freed: %v", freed))
	}
	return out
}

// TestClusterBundleSplitsMatchPulsar compares a bundle split on a
// pulsarsim cluster with a real one's.
func TestClusterBundleSplitsMatchPulsar(t *testing.T) {
	real := realCluster(t)
	got := splitStory(t, simCluster(t))
	want := splitStory(t, real)
	sameOnBoth(t, want, got)
}
