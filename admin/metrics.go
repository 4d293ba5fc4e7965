package admin

import (
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// The broker's metrics in Prometheus' text format, under Pulsar's names and
// labels (cluster, namespace, topic, subscription) and with its formatting:
// every family a gauge without help text, counts as integers, rates with
// three decimals. Topic-level metrics are on, as in Pulsar 4.0
// (exposeTopicLevelMetricsInPrometheus=true); consumer- and producer-level
// ones are off, as there. /metrics redirects to /metrics/, as Pulsar's
// servlet does.

func (s *Server) routeMetrics() {
	s.mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		http.Redirect(w, r, scheme+"://"+r.Host+"/metrics/", http.StatusFound)
	})
	s.mux.HandleFunc("GET /metrics/", s.metrics)
}

// sample is one line of a metric family.
type sample struct {
	labels string // {…}, already rendered
	value  string
}

// families collects samples by metric name, in the order names first come.
type families struct {
	names   []string
	samples map[string][]sample
}

func (f *families) add(name, labels, value string) {
	if f.samples == nil {
		f.samples = map[string][]sample{}
	}
	if _, ok := f.samples[name]; !ok {
		f.names = append(f.names, name)
	}
	f.samples[name] = append(f.samples[name], sample{labels, value})
}

// labels renders label pairs, escaping values as Prometheus' text format
// wants.
func labels(pairs ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(pairs); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(pairs[i])
		b.WriteString(`="`)
		b.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(pairs[i+1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// pulsarDouble formats a rate as Pulsar's metrics stream writes a double:
// the integer part, then three decimals truncated, or ".0" when they are
// all zero.
func pulsarDouble(d float64) string {
	i := int64(d)
	frac := int64(1000 * (d - float64(i)))
	if frac < 0 {
		frac = -frac
	}
	if frac == 0 {
		return strconv.FormatInt(i, 10) + ".0"
	}
	return strconv.FormatInt(i, 10) + "." + leftPad(strconv.FormatInt(frac, 10))
}

func leftPad(s string) string {
	for len(s) < 3 {
		s = "0" + s
	}
	return s
}

func count[T ~int | ~int64](v T) string { return strconv.FormatInt(int64(v), 10) }

func boolCount(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

// brokerTotals sums the topics' figures for the pulsar_broker_ family.
type brokerTotals struct {
	rateIn, rateOut, throughputIn, throughputOut               float64
	producers, consumers, subscriptions, topics, backlog, size int64
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	cluster := s.b.ClusterName()
	var f families
	var tot brokerTotals
	perNamespace := map[string]int64{}
	topics := s.b.Topics()
	sort.Strings(topics)
	for _, topic := range topics {
		st, err := s.b.TopicStats(topic)
		if err != nil {
			continue // a partitioned topic's name: its partitions are listed
		}
		tn, err := broker.ParseTopicName(topic)
		if err != nil {
			continue
		}
		perNamespace[tn.NamespaceName()]++
		s.topicMetrics(&f, &tot, cluster, tn, st)
	}
	nsNames := make([]string, 0, len(perNamespace))
	for ns := range perNamespace {
		nsNames = append(nsNames, ns)
	}
	sort.Strings(nsNames)
	for _, ns := range nsNames {
		f.add("pulsar_topics_count", labels("cluster", cluster, "namespace", ns), count(perNamespace[ns]))
	}
	c := labels("cluster", cluster)
	for _, m := range []struct{ name, value string }{
		{"pulsar_broker_topics_count", count(tot.topics)},
		{"pulsar_broker_subscriptions_count", count(tot.subscriptions)},
		{"pulsar_broker_producers_count", count(tot.producers)},
		{"pulsar_broker_consumers_count", count(tot.consumers)},
		{"pulsar_broker_rate_in", pulsarDouble(tot.rateIn)},
		{"pulsar_broker_rate_out", pulsarDouble(tot.rateOut)},
		{"pulsar_broker_throughput_in", pulsarDouble(tot.throughputIn)},
		{"pulsar_broker_throughput_out", pulsarDouble(tot.throughputOut)},
		{"pulsar_broker_storage_size", count(tot.size)},
		{"pulsar_broker_storage_logical_size", count(tot.size)},
		{"pulsar_broker_msg_backlog", count(tot.backlog)},
	} {
		f.add(m.name, c, m.value)
	}
	var b strings.Builder
	for _, name := range f.names {
		b.WriteString("# TYPE " + name + " gauge\n")
		for _, smp := range f.samples[name] {
			b.WriteString(name + smp.labels + " " + smp.value + "\n")
		}
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// topicMetrics adds one topic's (or partition's) series and its
// subscriptions'.
func (s *Server) topicMetrics(f *families, tot *brokerTotals, cluster string, tn broker.TopicName, st broker.TopicStats) {
	topic := tn.String()
	t := labels("cluster", cluster, "namespace", tn.NamespaceName(), "topic", topic)
	var consumers, backlog int64
	for _, ss := range st.Subscriptions {
		consumers += int64(len(ss.Consumers))
		backlog += ss.MsgBacklog
	}
	quotaBytes, quotaSeconds := s.backlogQuotaLimits(topic)
	for _, m := range []struct{ name, value string }{
		{"pulsar_subscriptions_count", count(len(st.Subscriptions))},
		{"pulsar_producers_count", count(len(st.Publishers))},
		{"pulsar_consumers_count", count(consumers)},
		{"pulsar_rate_in", pulsarDouble(st.MsgRateIn)},
		{"pulsar_rate_out", pulsarDouble(st.MsgRateOut)},
		{"pulsar_throughput_in", pulsarDouble(st.MsgThroughputIn)},
		{"pulsar_throughput_out", pulsarDouble(st.MsgThroughputOut)},
		{"pulsar_in_bytes_total", count(st.BytesInCounter)},
		{"pulsar_in_messages_total", count(st.MsgInCounter)},
		{"pulsar_average_msg_size", pulsarDouble(st.AverageMsgSize)},
		{"pulsar_storage_size", count(st.StorageSize)},
		{"pulsar_storage_logical_size", count(st.StorageSize)},
		{"pulsar_storage_offloaded_size", "0"},
		{"pulsar_msg_backlog", count(backlog)},
		{"pulsar_storage_backlog_quota_limit", count(quotaBytes)},
		{"pulsar_storage_backlog_quota_limit_time", count(quotaSeconds)},
	} {
		f.add(m.name, t, m.value)
	}
	subs := make([]string, 0, len(st.Subscriptions))
	for name := range st.Subscriptions {
		subs = append(subs, name)
	}
	sort.Strings(subs)
	for _, name := range subs {
		ss := st.Subscriptions[name]
		sl := labels("cluster", cluster, "namespace", tn.NamespaceName(), "topic", topic, "subscription", name)
		for _, m := range []struct{ name, value string }{
			{"pulsar_subscription_back_log", count(ss.MsgBacklog)},
			{"pulsar_subscription_back_log_no_delayed", count(ss.MsgBacklogNoDelayed)},
			{"pulsar_subscription_delayed", count(ss.MsgDelayed)},
			{"pulsar_subscription_unacked_messages", count(ss.UnackedMessages)},
			{"pulsar_subscription_blocked_on_unacked_messages", boolCount(ss.Blocked)},
			{"pulsar_subscription_consumers_count", count(len(ss.Consumers))},
			{"pulsar_subscription_msg_rate_out", pulsarDouble(ss.MsgRateOut)},
			{"pulsar_subscription_msg_throughput_out", pulsarDouble(ss.MsgThroughputOut)},
			{"pulsar_subscription_msg_rate_redeliver", pulsarDouble(ss.MsgRateRedeliver)},
			{"pulsar_out_bytes_total", count(ss.BytesOutCounter)},
			{"pulsar_out_messages_total", count(ss.MsgOutCounter)},
		} {
			f.add(m.name, sl, m.value)
		}
	}
	tot.topics++
	tot.subscriptions += int64(len(st.Subscriptions))
	tot.producers += int64(len(st.Publishers))
	tot.consumers += consumers
	tot.rateIn += st.MsgRateIn
	tot.rateOut += st.MsgRateOut
	tot.throughputIn += st.MsgThroughputIn
	tot.throughputOut += st.MsgThroughputOut
	tot.size += st.StorageSize
	tot.backlog += backlog
}

// backlogQuotaLimits returns the size (bytes) and time (seconds) limits of
// the backlog quotas in force on a topic, -1 for none, as Pulsar's metrics
// and stats show them.
func (s *Server) backlogQuotaLimits(topic string) (bytes, seconds int64) {
	bytes, seconds = -1, -1
	if p, err := s.b.AppliedPolicies(topic); err == nil {
		if q := p.BacklogQuota; q != nil {
			bytes = q.LimitBytes
		}
		if q := p.MessageAgeBacklogQuota; q != nil && q.LimitSeconds > 0 {
			seconds = int64(q.LimitSeconds)
		}
	}
	return bytes, seconds
}
