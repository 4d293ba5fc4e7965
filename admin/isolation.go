package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Namespace isolation policies of a cluster (Pulsar's
// NamespaceIsolationPolicies): stored and served, and matched against the
// brokers' ids as Pulsar matches them; no load manager of pulsarsim places
// bundles by them.

func (s *Server) routeIsolation() {
	m := s.clusterMux
	const p = "/admin/v2/clusters/{cluster}/namespaceIsolationPolicies"
	m.HandleFunc("GET "+p, s.listIsolationPolicies)
	m.HandleFunc("GET "+p+"/{policy}", s.getIsolationPolicy)
	m.HandleFunc("POST "+p+"/{policy}", s.setIsolationPolicy)
	m.HandleFunc("DELETE "+p+"/{policy}", s.deleteIsolationPolicy)
	m.HandleFunc("GET "+p+"/brokers/{broker}", s.brokerIsolation)
}

// isolationJSON is NamespaceIsolationData as Pulsar reads it.
type isolationJSON struct {
	Namespaces   *[]string         `json:"namespaces"`
	Primary      *[]string         `json:"primary"`
	Secondary    *[]string         `json:"secondary"`
	AutoFailover *autoFailoverJSON `json:"auto_failover_policy"`
	UnloadScope  *string           `json:"unload_scope"`
}

type autoFailoverJSON struct {
	PolicyType *string      `json:"policy_type"`
	Parameters *orderedStrs `json:"parameters"`
}

// orderedStrs is a JSON object of strings in the order written.
type orderedStrs [][2]string

func (o *orderedStrs) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("parameters: not an object")
	}
	*o = orderedStrs{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return err
		}
		text, ok := v.(string)
		if !ok {
			raw, _ := json.Marshal(v)
			text = string(raw)
		}
		*o = append(*o, [2]string{k.(string), text})
	}
	return nil
}

// validUnloadScopes are NamespaceIsolationPolicyUnloadScope's values;
// Pulsar reads any other as null.
var validUnloadScopes = []string{"all_matching", "none", "changed"}

// isolationPolicy reads and validates a policy as Pulsar does: ok false
// with the 400 Pulsar answers (which shows the policy as it read it).
func isolationPolicy(name string, in isolationJSON) (broker.IsolationPolicy, error) {
	var p broker.IsolationPolicy
	if in.AutoFailover != nil && in.AutoFailover.PolicyType != nil && *in.AutoFailover.PolicyType != "min_available" {
		in.AutoFailover.PolicyType = nil
	}
	if in.UnloadScope != nil && !contains(validUnloadScopes, *in.UnloadScope) {
		in.UnloadScope = nil
	}
	valid := in.Namespaces != nil && len(*in.Namespaces) > 0 && in.Primary != nil && len(*in.Primary) > 0 &&
		in.Secondary != nil && in.AutoFailover != nil && in.AutoFailover.PolicyType != nil && in.AutoFailover.Parameters != nil
	if valid {
		for _, re := range append(append([]string{}, *in.Primary...), *in.Secondary...) {
			if strings.TrimSpace(re) != "" {
				if _, err := regexp.Compile(re); err != nil {
					valid = false
				}
			}
		}
		params := map[string]string{}
		for _, kv := range *in.AutoFailover.Parameters {
			params[kv[0]] = kv[1]
		}
		for _, k := range []string{"min_limit", "usage_threshold"} {
			if _, err := strconv.ParseInt(params[k], 10, 32); err != nil {
				valid = false
			}
		}
	}
	if !valid {
		return p, errStatus(http.StatusBadRequest, "Invalid format of input policy data. policy: "+name+"; data: "+isolationPretty(in))
	}
	p = broker.IsolationPolicy{Namespaces: *in.Namespaces, Primary: *in.Primary, Secondary: *in.Secondary,
		AutoFailover: broker.AutoFailoverPolicy{Type: *in.AutoFailover.PolicyType, Parameters: *in.AutoFailover.Parameters}}
	if in.UnloadScope != nil {
		p.UnloadScope = *in.UnloadScope
	}
	return p, nil
}

// isolationPretty writes a policy as Jackson's default pretty printer
// does, for Pulsar's 400.
func isolationPretty(in isolationJSON) string {
	str := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	list := func(l *[]string) string {
		if l == nil {
			return "null"
		}
		if len(*l) == 0 {
			return "[ ]"
		}
		parts := make([]string, len(*l))
		for i, x := range *l {
			parts[i] = str(x)
		}
		return "[ " + strings.Join(parts, ", ") + " ]"
	}
	failover := "null"
	if f := in.AutoFailover; f != nil {
		params := "null"
		if f.Parameters != nil {
			if len(*f.Parameters) == 0 {
				params = "{ }"
			} else {
				var kv []string
				for _, p := range *f.Parameters {
					kv = append(kv, "      "+str(p[0])+" : "+str(p[1]))
				}
				params = "{\n" + strings.Join(kv, ",\n") + "\n    }"
			}
		}
		typ := "null"
		if f.PolicyType != nil {
			typ = str(*f.PolicyType)
		}
		failover = "{\n    \"parameters\" : " + params + ",\n    \"policy_type\" : " + typ + "\n  }"
	}
	scope := "null"
	if in.UnloadScope != nil {
		scope = str(*in.UnloadScope)
	}
	return "{\n  \"namespaces\" : " + list(in.Namespaces) + ",\n  \"primary\" : " + list(in.Primary) +
		",\n  \"secondary\" : " + list(in.Secondary) + ",\n  \"auto_failover_policy\" : " + failover +
		",\n  \"unload_scope\" : " + scope + "\n}"
}

// isolationDoc is a policy as Pulsar writes it: its parameters in their
// order, no unload scope when none was given.
func isolationDoc(p broker.IsolationPolicy) json.RawMessage {
	var params bytes.Buffer
	params.WriteByte('{')
	for i, kv := range p.AutoFailover.Parameters {
		if i > 0 {
			params.WriteByte(',')
		}
		k, _ := json.Marshal(kv[0])
		v, _ := json.Marshal(kv[1])
		params.Write(k)
		params.WriteByte(':')
		params.Write(v)
	}
	params.WriteByte('}')
	doc := struct {
		Namespaces   []string `json:"namespaces"`
		Primary      []string `json:"primary"`
		Secondary    []string `json:"secondary"`
		AutoFailover struct {
			Parameters json.RawMessage `json:"parameters"`
			PolicyType string          `json:"policy_type"`
		} `json:"auto_failover_policy"`
		UnloadScope string `json:"unload_scope,omitempty"`
	}{Namespaces: p.Namespaces, Primary: p.Primary, Secondary: p.Secondary, UnloadScope: p.UnloadScope}
	doc.AutoFailover.Parameters = params.Bytes()
	doc.AutoFailover.PolicyType = p.AutoFailover.Type
	b, _ := json.Marshal(doc)
	return b
}

// isolationError gives the errors of the isolation policies Pulsar's
// answers; cluster404 is set where Pulsar answers a missing cluster with
// 404 rather than 412.
func isolationError(err error, cluster string, cluster404 bool) error {
	switch {
	case errors.Is(err, broker.ErrClusterNotFound) && cluster404:
		return errStatus(http.StatusNotFound, "Cluster "+cluster+" does not exist.")
	case errors.Is(err, broker.ErrIsolationPoliciesNotFound):
		return errStatus(http.StatusNotFound, "NamespaceIsolationPolicies for cluster "+cluster+" does not exist")
	}
	return clusterGone(err, cluster)
}

func (s *Server) listIsolationPolicies(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	ps, err := s.b.IsolationPolicies(cluster)
	if err != nil {
		reply(w, nil, isolationError(err, cluster, true))
		return
	}
	out := map[string]json.RawMessage{}
	for name, p := range ps {
		out[name] = isolationDoc(p)
	}
	reply(w, out, nil)
}

func (s *Server) getIsolationPolicy(w http.ResponseWriter, r *http.Request) {
	cluster, name := r.PathValue("cluster"), r.PathValue("policy")
	if name == "brokers" {
		s.brokersIsolation(w, r)
		return
	}
	ps, err := s.b.IsolationPolicies(cluster)
	if err != nil {
		reply(w, nil, isolationError(err, cluster, false))
		return
	}
	p, ok := ps[name]
	if !ok {
		httpError(w, http.StatusNotFound, "Cannot find NamespaceIsolationPolicy "+name+" for cluster "+cluster)
		return
	}
	reply(w, isolationDoc(p), nil)
}

// setIsolationPolicy writes a policy: Pulsar checks the cluster (412)
// before the policy (400). Pulsar then unloads the namespaces it matches
// (unless unloadBundles=false); pulsarsim, which does not place bundles by
// policy, leaves their owners.
func (s *Server) setIsolationPolicy(w http.ResponseWriter, r *http.Request) {
	cluster, name := r.PathValue("cluster"), r.PathValue("policy")
	body, err := readBody(r, 1<<20)
	if err != nil {
		reply(w, nil, err)
		return
	}
	t := bytes.TrimSpace(body)
	var in isolationJSON
	if len(t) > 0 && string(t) != "null" {
		if err := json.Unmarshal(t, &in); err != nil {
			reply(w, nil, badBody(t, err))
			return
		}
	}
	if _, ok := s.b.Cluster(cluster); !ok {
		reply(w, nil, clusterGone(broker.ErrClusterNotFound, cluster))
		return
	}
	if len(t) == 0 || string(t) == "null" {
		// Pulsar fails on the missing policy with a NullPointerException.
		httpError(w, http.StatusInternalServerError, "the namespace isolation policy data is null")
		return
	}
	p, err := isolationPolicy(name, in)
	if err == nil {
		err = s.b.SetIsolationPolicy(cluster, name, p)
	}
	reply(w, nil, isolationError(err, cluster, false))
}

func (s *Server) deleteIsolationPolicy(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	reply(w, nil, isolationError(s.b.DeleteIsolationPolicy(cluster, r.PathValue("policy")), cluster, false))
}

// brokerIsolationDoc is what the cluster's policies say of a broker
// (Pulsar's BrokerNamespaceIsolationData): the namespaces of the policies
// that name it primary or secondary, and the last such policy.
func brokerIsolationDoc(id string, ps map[string]broker.IsolationPolicy) map[string]any {
	doc := map[string]any{"brokerName": id, "primary": false}
	regexes := []string{}
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		p := ps[name]
		primary, secondary := matchesAny(p.Primary, id), matchesAny(p.Secondary, id)
		if primary || secondary {
			regexes = append(regexes, p.Namespaces...)
			doc["primary"] = primary
			doc["policyName"] = name
		}
	}
	doc["namespaceRegex"] = regexes
	return doc
}

// matchesAny reports whether one of the regular expressions matches all
// of s.
func matchesAny(regexes []string, s string) bool {
	for _, re := range regexes {
		if m, err := regexp.MatchString("^(?:"+re+")$", s); err == nil && m {
			return true
		}
	}
	return false
}

// brokersIsolation answers, for each live broker of the cluster, what the
// policies say of it.
func (s *Server) brokersIsolation(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	ps, err := s.b.IsolationPolicies(cluster)
	if err != nil {
		reply(w, nil, isolationError(err, cluster, false))
		return
	}
	out := []map[string]any{}
	for _, id := range s.liveBrokerIDs(r) {
		out = append(out, brokerIsolationDoc(id, ps))
	}
	reply(w, out, nil)
}

func (s *Server) brokerIsolation(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	ps, err := s.b.IsolationPolicies(cluster)
	if err != nil {
		reply(w, nil, isolationError(err, cluster, false))
		return
	}
	reply(w, brokerIsolationDoc(r.PathValue("broker"), ps), nil)
}

// liveBrokerIDs are the ids of the cluster's live brokers (a lone broker:
// this one).
func (s *Server) liveBrokerIDs(r *http.Request) []string {
	if !s.clustered() {
		return []string{s.brokerID(r)}
	}
	ids := []string{}
	for _, info := range s.b.Brokers() {
		if info.Alive {
			ids = append(ids, info.ID)
		}
	}
	return ids
}
