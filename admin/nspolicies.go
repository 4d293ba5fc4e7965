package admin

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Namespace and topic endpoints beyond policyEndpoints' mould: replication
// clusters (checked against the broker's one cluster), the namespace's
// anti-affinity group, subscription permissions, and clearing or dropping a
// subscription in all of a namespace's topics. Answers are Pulsar 4.0.8's.

func (s *Server) routeNamespaceExtras() {
	const ns = "/admin/v2/namespaces/{tenant}/{ns}/"
	const topic = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/"
	m := s.mux
	m.HandleFunc("GET "+ns+"replication", s.getNamespaceReplication)
	m.HandleFunc("POST "+ns+"replication", s.setNamespaceReplication)
	m.HandleFunc("GET "+topic+"replication", s.getTopicReplication)
	m.HandleFunc("POST "+topic+"replication", s.setTopicReplication)
	m.HandleFunc("DELETE "+topic+"replication", s.removeTopicReplication)
	m.HandleFunc("GET "+ns+"antiAffinity", s.getAntiAffinity)
	m.HandleFunc("POST "+ns+"antiAffinity", s.setAntiAffinity)
	m.HandleFunc("DELETE "+ns+"antiAffinity", s.removeAntiAffinity)
	m.HandleFunc("GET "+ns+"permissions/subscription", s.subscriptionPermissions)
	m.HandleFunc("POST "+ns+"permissions/subscription/{sub}", s.grantSubscriptionPermission)
	m.HandleFunc("POST "+ns+"clearBacklog", s.clearNamespaceBacklog)
	m.HandleFunc("DELETE "+ns+"removeOffloadPolicies", s.removeOffloadPolicies)
	// Methods Pulsar does not serve on these paths (it serves others).
	for _, p := range []string{"POST " + ns + "offloadThreshold", "POST " + ns + "offloadThresholdInSeconds",
		"POST " + ns + "offloadDeletionLagMs", "PUT " + ns + "offloadPolicies", "POST " + ns + "schemaAutoUpdateCompatibilityStrategy",
		"PUT " + ns + "encryptionRequired", "PUT " + ns + "subscriptionAuthMode", "PUT " + ns + "subscribeRate",
		"PUT " + topic + "subscribeRate", "PUT " + ns + "antiAffinity", "PUT " + ns + "replication", "PUT " + topic + "replication",
		"POST " + ns + "unsubscribe", "PUT " + ns + "permissions/subscription/{sub}", "PUT " + ns + "inactiveTopicPolicies",
		"PUT " + topic + "inactiveTopicPolicies", "PUT " + topic + "persistence", "PUT " + ns + "persistence",
		"PUT " + topic + "offloadPolicies"} {
		m.HandleFunc(p, jerseyMethodNotAllowed)
	}
}

// jerseyMethodNotAllowed answers a method a path does not serve with
// Jersey's HTML page, as Pulsar does.
func jerseyMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html;charset=ISO-8859-1")
	w.WriteHeader(http.StatusMethodNotAllowed)
	_, _ = io.WriteString(w, "<html><head><title>Error 405 Method Not Allowed</title></head>"+
		"<body><h2>HTTP ERROR 405 Method Not Allowed</h2></body></html>\n")
}

// removeOffloadPolicies removes a namespace's offload policies. Pulsar
// fails to update the policies of a namespace that does not exist with a
// 409.
func (s *Server) removeOffloadPolicies(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil && !s.b.NamespaceExists(ns) {
		err = errStatus(http.StatusConflict, "Concurrent modification")
	}
	if err == nil {
		err = s.b.UpdateNamespacePolicies(ns, func(p *broker.Policies) { p.Offload = nil })
	}
	reply(w, nil, err)
}

// readClusters reads a replication body: a JSON list of cluster names.
func readClusters(r *http.Request) ([]string, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, errStatus(http.StatusBadRequest, err.Error())
	}
	if strings.TrimSpace(string(body)) == "" {
		return nil, nil
	}
	var list []*string
	if err := decodeBody(body, &list); err != nil {
		return nil, err
	}
	out := make([]string, len(list))
	for i, c := range list {
		out[i] = "null"
		if c != nil {
			out[i] = *c
		}
	}
	return out, nil
}

// checkClusters checks a replication list as Pulsar does: not empty, no
// "global", (at topic level) the local cluster kept, every name a cluster
// that exists and that the tenant may use (when its allowed clusters were
// given). It returns the list without duplicates.
func (s *Server) checkClusters(list []string, topicLevel bool, tenant string) ([]string, error) {
	local := s.b.ClusterName()
	switch {
	case len(list) == 0:
		return nil, errStatus(http.StatusPreconditionFailed, "ClusterIds should not be null or empty")
	case slices.Contains(list, "global"):
		return nil, errStatus(http.StatusPreconditionFailed, "Cannot specify global in the list of replication clusters")
	case topicLevel && !slices.Contains(list, local):
		return nil, errStatus(http.StatusPreconditionFailed,
			"Can not remove local cluster from the local topic-level replication clusters policy")
	}
	allowed := s.tenantClusters(tenant)
	var out []string
	for _, c := range list {
		if _, ok := s.b.Cluster(c); !ok && c != local {
			return nil, errStatus(http.StatusForbidden, "Invalid cluster id: "+c)
		}
		if allowed != nil && !slices.Contains(allowed, c) {
			return nil, errStatus(http.StatusForbidden, fmt.Sprintf(
				"Cluster [%s] is not in the list of allowed clusters list for tenant [%s]", c, tenant))
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// replicationOf is a level's replication clusters, or nil when unset.
func replicationOf(p broker.Policies) []string {
	if p.ReplicationClusters == nil {
		return nil
	}
	return *p.ReplicationClusters
}

// namespaceReplication is the namespace's replication clusters: its own,
// else the broker's cluster.
func (s *Server) namespaceReplication(p broker.Policies) []string {
	if c := replicationOf(p); c != nil {
		return c
	}
	return []string{s.b.ClusterName()}
}

func (s *Server) getNamespaceReplication(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var pol broker.Policies
	if err == nil {
		pol, err = s.b.NamespacePolicies(ns)
	}
	reply(w, s.namespaceReplication(pol), err)
}

// setNamespaceReplication sets a namespace's clusters; the list is checked
// before the namespace is looked up, and success is a 200 without body.
func (s *Server) setNamespaceReplication(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var list []string
	if err == nil {
		list, err = readClusters(r)
	}
	if err == nil {
		list, err = s.checkClusters(list, false, ns[:strings.Index(ns, "/")])
	}
	if err == nil {
		err = s.b.UpdateNamespacePolicies(ns, func(p *broker.Policies) { p.ReplicationClusters = &list })
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) getTopicReplication(w http.ResponseWriter, r *http.Request) {
	topic, err := s.policyTopic(r)
	var own, ns broker.Policies
	if err == nil {
		own, err = s.b.TopicPolicies(topic)
	}
	if err == nil && boolParam(r, "applied") {
		tn, _ := broker.ParseTopicName(topic)
		ns, err = s.b.NamespacePolicies(tn.NamespaceName())
		if c := replicationOf(own); c == nil && err == nil {
			reply(w, s.namespaceReplication(ns), nil)
			return
		}
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	if c := replicationOf(own); c != nil {
		reply(w, c, nil)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// setTopicReplication sets a topic's clusters: a body that does not parse
// is refused first, then a missing topic, then the list.
func (s *Server) setTopicReplication(w http.ResponseWriter, r *http.Request) {
	list, err := readClusters(r)
	var topic string
	if err == nil {
		topic, err = s.policyTopic(r)
	}
	if err == nil {
		tn, _ := broker.ParseTopicName(topic)
		list, err = s.checkClusters(list, true, tn.Tenant)
	}
	if err == nil {
		err = s.b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.ReplicationClusters = &list })
	}
	reply(w, nil, err)
}

func (s *Server) removeTopicReplication(w http.ResponseWriter, r *http.Request) {
	topic, err := s.policyTopic(r)
	if err == nil {
		err = s.b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.ReplicationClusters = nil })
	}
	reply(w, nil, err)
}

// Anti-affinity groups. Pulsar keeps them in a namespace's local policies,
// which exist apart from the namespace: a group may be set, read and
// removed for a namespace that does not exist, and the policies document
// does not show it. The broker's store keeps them likewise, for every
// broker of a cluster.

func (s *Server) getAntiAffinity(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	g, ok := s.b.AntiAffinityGroup(ns)
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	// Pulsar answers the group as it was sent, not as a JSON string.
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, g)
}

func (s *Server) setAntiAffinity(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var body []byte
	if err == nil {
		body, err = readBody(r, 1<<16)
	}
	if err == nil && len(body) == 0 {
		err = errStatus(http.StatusPreconditionFailed, "antiAffinityGroup can't be empty")
	}
	if err == nil {
		s.b.SetAntiAffinityGroup(ns, string(body))
	}
	reply(w, nil, err)
}

// antiAffineNamespaces lists the namespaces of the tenant the query names
// whose anti-affinity group is the path's (letter case aside), with
// Pulsar's refusals: no tenant, an empty group, a cluster that does not
// exist.
func (s *Server) antiAffineNamespaces(w http.ResponseWriter, r *http.Request) {
	tenant, group := r.URL.Query().Get("tenant"), r.PathValue("group")
	switch {
	case tenant == "":
		reply(w, nil, errStatus(http.StatusBadRequest, "Tenant should not be null"))
		return
	case strings.TrimSpace(group) == "":
		reply(w, nil, errStatus(http.StatusPreconditionFailed, "anti-affinity group can't be empty."))
		return
	}
	if _, ok := s.b.Cluster(r.PathValue("cluster")); !ok {
		reply(w, nil, errStatus(http.StatusPreconditionFailed, "Cluster "+r.PathValue("cluster")+" does not exist."))
		return
	}
	out := []string{}
	namespaces, _ := s.b.Namespaces(tenant) // an unknown tenant has none
	for _, ns := range namespaces {
		if g, ok := s.b.AntiAffinityGroup(ns); ok && strings.EqualFold(g, group) {
			out = append(out, ns)
		}
	}
	reply(w, out, nil)
}

func (s *Server) removeAntiAffinity(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil {
		s.b.RemoveAntiAffinityGroup(ns)
	}
	reply(w, nil, err)
}

// subscriptionRolesOut is a namespace's subscription permissions as Pulsar
// writes them: every subscription granted, even to no role.
func subscriptionRolesOut(p broker.Policies) map[string][]string {
	out := map[string][]string{}
	for sub, roles := range p.SubscriptionAuthRoles {
		out[sub] = append([]string{}, roles...)
	}
	return out
}

func (s *Server) subscriptionPermissions(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var pol broker.Policies
	if err == nil {
		pol, err = s.b.NamespacePolicies(ns)
	}
	reply(w, subscriptionRolesOut(pol), err)
}

// grantSubscriptionPermission sets the roles that may use a subscription
// of the namespace (replacing those it had).
func (s *Server) grantSubscriptionPermission(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var body []byte
	if err == nil {
		body, err = readBody(r, 1<<20)
	}
	var roles []string
	if err == nil && strings.TrimSpace(string(body)) == "" {
		err = errStatus(http.StatusBadRequest, "Roles should not be null")
	} else if err == nil {
		err = decodeBody(body, &roles)
	}
	if err == nil && !s.b.NamespaceExists(ns) {
		// Pulsar fails to update policies it cannot find.
		err = errStatus(http.StatusInternalServerError, "Namespace policies not found")
	}
	if err == nil {
		sort.Strings(roles)
		roles = slices.Compact(roles)
		sub := r.PathValue("sub")
		err = s.b.UpdateNamespacePolicies(ns, func(p *broker.Policies) {
			m := map[string][]string{}
			for k, v := range p.SubscriptionAuthRoles {
				m[k] = v
			}
			m[sub] = roles
			p.SubscriptionAuthRoles = m
		})
	}
	reply(w, nil, err)
}

// revokeSubscriptionPermission takes a role from a subscription's roles;
// the subscription goes when its last role does. A subscription that has
// no permissions fails inside Pulsar (500), a namespace that does not exist
// is a 404 without reason.
func (s *Server) revokeSubscriptionPermission(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil && !s.b.NamespaceExists(ns) {
		err = errStatus(http.StatusNotFound, "")
	}
	sub, role := r.PathValue("sub"), r.PathValue("role")
	var missing bool
	if err == nil {
		err = s.b.UpdateNamespacePolicies(ns, func(p *broker.Policies) {
			roles, ok := p.SubscriptionAuthRoles[sub]
			if missing = !ok; missing {
				return
			}
			m := map[string][]string{}
			for k, v := range p.SubscriptionAuthRoles {
				m[k] = v
			}
			if kept := slices.DeleteFunc(slices.Clone(roles), func(x string) bool { return x == role }); len(kept) > 0 {
				m[sub] = kept
			} else {
				delete(m, sub)
			}
			p.SubscriptionAuthRoles = m
		})
	}
	if err == nil && missing {
		err = errStatus(http.StatusInternalServerError, "couldn't find subscription")
	}
	reply(w, nil, err)
}

// nsSubscriptionRoute returns the handler and pattern of the namespace
// routes that name a subscription: POST .../clearBacklog/{sub}, POST
// .../unsubscribe/{sub} and DELETE .../permissions/{sub}/{role} under
// /admin/v2/namespaces/{tenant}/{ns}, with the path values set, or nil.
// They are routed by hand: as mux patterns they would collide with the
// topic routes (.../{topic}/partitions, .../{topic}/permissions/{role}).
func (s *Server) nsSubscriptionRoute(r *http.Request, parts []string) (http.Handler, string) {
	if len(parts) < 6 || parts[0] != "admin" || parts[1] != "v2" || parts[2] != "namespaces" {
		return nil, ""
	}
	const ns = "/admin/v2/namespaces/{tenant}/{ns}/"
	names := map[int]string{3: "tenant", 4: "ns", 6: "sub"}
	var h http.HandlerFunc
	var pattern string
	switch {
	case len(parts) == 7 && r.Method == http.MethodPost && parts[5] == "clearBacklog":
		h, pattern = s.clearNamespaceBacklog, ns+"clearBacklog/{sub}"
	case len(parts) == 7 && r.Method == http.MethodPost && parts[5] == "unsubscribe":
		h, pattern = s.unsubscribeNamespace, ns+"unsubscribe/{sub}"
	case len(parts) == 8 && r.Method == http.MethodDelete && parts[5] == "permissions":
		h, pattern = s.revokeSubscriptionPermission, ns+"permissions/{sub}/{role}"
		names[7] = "role"
	case len(parts) == 6 && r.Method == http.MethodGet && parts[4] == "antiAffinity":
		h, pattern = s.antiAffineNamespaces, "/admin/v2/namespaces/{cluster}/antiAffinity/{group}"
		names = map[int]string{3: "cluster", 5: "group"}
	case len(parts) == 7 && r.Method == http.MethodPost && parts[6] == "clearBacklog":
		h, pattern = s.clearBundleBacklog, ns+"{bundle}/clearBacklog"
		names = map[int]string{3: "tenant", 4: "ns", 5: "bundle"}
	case len(parts) == 8 && r.Method == http.MethodPost && parts[6] == "clearBacklog":
		h, pattern = s.clearBundleBacklog, ns+"{bundle}/clearBacklog/{sub}"
		names = map[int]string{3: "tenant", 4: "ns", 5: "bundle", 7: "sub"}
	case len(parts) == 8 && r.Method == http.MethodPost && parts[6] == "unsubscribe":
		h, pattern = s.unsubscribeBundle, ns+"{bundle}/unsubscribe/{sub}"
		names = map[int]string{3: "tenant", 4: "ns", 5: "bundle", 7: "sub"}
	default:
		return s.nsPropertyRoute(r, parts)
	}
	if !setPathValues(r, parts, names) {
		return nil, ""
	}
	return h, r.Method + " " + pattern
}

// namespaceSubscriptionTopics returns the namespace's persistent topics
// (each partition on its own).
func (s *Server) namespaceSubscriptionTopics(ns string) []string {
	return s.b.TopicsOfNamespace(ns, broker.TopicsPersistent)
}

// clearNamespaceBacklog clears the backlog of every subscription (or of the
// one named) on all of the namespace's topics. As in Pulsar, a namespace
// that does not exist has nothing to clear, and a named subscription that
// a topic lacks fails the request (500).
func (s *Server) clearNamespaceBacklog(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, nil, s.clearBacklogOf(s.namespaceSubscriptionTopics(ns), r.PathValue("sub")))
}

// clearBacklogOf clears the backlog of every subscription of topics, or of
// the one named, which every topic must have (500 otherwise, as Pulsar's
// "Cursor not found").
func (s *Server) clearBacklogOf(topics []string, sub string) error {
	var err error
	for _, topic := range topics {
		subs, serr := s.b.Subscriptions(topic)
		if serr != nil {
			continue // gone meanwhile
		}
		if sub != "" {
			if !slices.Contains(subs, sub) {
				err = errStatus(http.StatusInternalServerError, "Cursor not found")
				continue
			}
			subs = []string{sub}
		}
		for _, name := range subs {
			if cerr := s.b.ClearBacklog(topic, name); cerr != nil && !errors.Is(cerr, broker.ErrSubscriptionNotFound) {
				err = cerr
			}
		}
	}
	return err
}

// unsubscribeNamespace deletes the subscription from every topic of the
// namespace that has it.
func (s *Server) unsubscribeNamespace(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, nil, s.unsubscribeFrom(s.namespaceSubscriptionTopics(ns), r.PathValue("sub")))
}

// unsubscribeFrom deletes subscription sub from every one of topics that
// has it.
func (s *Server) unsubscribeFrom(topics []string, sub string) error {
	var err error
	for _, topic := range topics {
		subs, serr := s.b.Subscriptions(topic)
		if serr != nil || !slices.Contains(subs, sub) {
			continue
		}
		if derr := s.b.DeleteSubscription(topic, sub, false); derr != nil && !errors.Is(derr, broker.ErrSubscriptionNotFound) {
			err = derr
		}
	}
	return err
}

// The per-bundle forms: the same for the namespace's topics in one bundle,
// at the bundle's owner. As Pulsar's validateBundleOwnership, they look no
// bundle up: another broker's bundle is redirected to, a bundle nobody owns
// is refused with 412. A lone broker owns the bundles its namespace's
// topics fall in (Pulsar's standalone owns a bundle once one of its topics
// was loaded).

func (s *Server) clearBundleBacklog(w http.ResponseWriter, r *http.Request) {
	if topics, ok := s.bundleTopics(w, r); ok {
		reply(w, nil, s.clearBacklogOf(topics, r.PathValue("sub")))
	}
}

func (s *Server) unsubscribeBundle(w http.ResponseWriter, r *http.Request) {
	if topics, ok := s.bundleTopics(w, r); ok {
		reply(w, nil, s.unsubscribeFrom(topics, r.PathValue("sub")))
	}
}

// bundleTopics returns the persistent topics of the path's bundle when this
// broker owns it; otherwise it answers (a missing namespace, an invalid
// range, a redirect to the owner, no owner) and returns false.
func (s *Server) bundleTopics(w http.ResponseWriter, r *http.Request) ([]string, bool) {
	ns, err := namespaceFromPath(r)
	if err == nil && !s.b.NamespaceExists(ns) {
		err = broker.ErrNamespaceNotFound
	}
	var bd broker.Bundle
	if err == nil {
		bd, err = broker.ParseBundleRange(ns, r.PathValue("bundle"))
	}
	if err == nil {
		err = s.b.CheckBundle(bd)
	}
	if err != nil {
		reply(w, nil, splitError(err))
		return nil, false
	}
	var topics []string
	for _, topic := range s.namespaceSubscriptionTopics(ns) {
		if in, berr := s.b.BundleOf(topic); berr == nil && in == bd {
			topics = append(topics, topic)
		}
	}
	owner, owned := s.b.BundleOwner(bd)
	switch {
	case owned && !owner.Self:
		s.redirectBundle(w, r, owner)
		return nil, false
	case !owned && (len(s.b.Brokers()) > 1 || len(topics) == 0):
		httpError(w, http.StatusPreconditionFailed, "Failed to find ownership for ServiceUnit:"+bd.String())
		return nil, false
	}
	return topics, true
}

// namespaceDocExtras adds to a namespace's policies document what the
// entries of policyEndpoints do not: replication clusters, the subscribe
// rate by cluster, the legacy offload thresholds (Pulsar 4.0 keeps them at
// -1 and sets the offload policies' instead) and the permissions (topic
// grants are not listed in destination_auth).
func (s *Server) namespaceDocExtras(doc map[string]any, ns string, pol broker.Policies) {
	doc["replication_clusters"] = s.namespaceReplication(pol)
	doc["clusterSubscribeRate"] = map[string]any{}
	if v, set := subscribeRateEndpoint.value(pol); set {
		doc["clusterSubscribeRate"] = map[string]any{s.b.ClusterName(): v}
	}
	doc["offload_threshold"], doc["offload_threshold_in_seconds"] = -1, -1
	perms, _ := s.b.NamespacePermissions(ns)
	if perms == nil {
		perms = map[string][]string{}
	}
	doc["auth_policies"] = map[string]any{"namespace_auth": perms, "destination_auth": map[string]any{},
		"subscription_auth_roles": subscriptionRolesOut(pol)}
}

// setPathValues sets r's path values from the (escaped) path segments at
// the indexes given; false if one does not unescape.
func setPathValues(r *http.Request, parts []string, names map[int]string) bool {
	for i, name := range names {
		v, err := url.PathUnescape(parts[i])
		if err != nil {
			return false
		}
		r.SetPathValue(name, v)
	}
	return true
}
