package admin

import (
	"errors"
	"net/http"
	"slices"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Handlers for tenants and namespaces.

func (s *Server) listTenants(w http.ResponseWriter, _ *http.Request) {
	reply(w, s.b.Tenants(), nil)
}

// createTenant creates a tenant. The body's roles and clusters are read (a
// body that does not parse is a 400, a cluster that does not exist a 412)
// and kept.
func (s *Server) createTenant(w http.ResponseWriter, r *http.Request) {
	var info struct {
		AdminRoles      []string `json:"adminRoles"`
		AllowedClusters []string `json:"allowedClusters"`
	}
	err := decodeJSON(r, &info)
	for _, c := range info.AllowedClusters {
		if _, ok := s.b.Cluster(c); !ok && err == nil {
			err = errStatus(http.StatusPreconditionFailed, "Clusters do not exist")
		}
	}
	if err == nil {
		err = s.b.CreateTenant(r.PathValue("tenant"))
	}
	if err == nil && len(info.AdminRoles) > 0 {
		err = s.b.SetTenantAdminRoles(r.PathValue("tenant"), info.AdminRoles)
	}
	if err == nil && len(info.AllowedClusters) > 0 {
		err = s.b.SetTenantAllowedClusters(r.PathValue("tenant"), info.AllowedClusters)
	}
	reply(w, nil, err)
}

// tenantClusters are the clusters a tenant may use: those its creation or
// last update gave, else the broker's own cluster.
func (s *Server) tenantClusters(tenant string) []string {
	if c, _ := s.b.TenantAllowedClusters(tenant); c != nil {
		return c
	}
	return []string{s.b.ClusterName()}
}

func (s *Server) getTenant(w http.ResponseWriter, r *http.Request) {
	if !slices.Contains(s.b.Tenants(), r.PathValue("tenant")) {
		reply(w, nil, broker.ErrTenantNotFound)
		return
	}
	roles := s.b.TenantAdminRoles(r.PathValue("tenant"))
	if roles == nil {
		roles = []string{}
	}
	reply(w, map[string]any{"adminRoles": roles, "allowedClusters": s.tenantClusters(r.PathValue("tenant"))}, nil)
}

// forceDeleteAllowed reports whether the dynamic configuration allows a
// forced deletion (forceDeleteNamespaceAllowed, forceDeleteTenantAllowed:
// false by default, as on Pulsar).
func (s *Server) forceDeleteAllowed(name string) bool {
	return s.b.DynamicConfig()[name] == "true"
}

// deleteTenant deletes a tenant without namespaces. With ?force=true, which
// the broker refuses unless forceDeleteTenantAllowed is set, its
// namespaces and their topics go first.
func (s *Server) deleteTenant(w http.ResponseWriter, r *http.Request) {
	tenant := r.PathValue("tenant")
	force := boolParam(r, "force")
	var err error
	if force && !s.forceDeleteAllowed("forceDeleteTenantAllowed") {
		err = errStatus(http.StatusMethodNotAllowed, "Broker doesn't allow forced deletion of tenants")
	}
	if err == nil && force {
		list, lerr := s.b.Namespaces(tenant)
		for _, ns := range list {
			if lerr == nil {
				lerr = s.b.DeleteNamespace(ns, true)
			}
		}
		if !errors.Is(lerr, broker.ErrTenantNotFound) {
			err = lerr
		}
	}
	if err == nil {
		err = s.b.DeleteTenant(tenant)
	}
	if errors.Is(err, broker.ErrTenantNotFound) {
		err = errStatus(http.StatusNotFound, "Tenant doesn't exist")
	}
	reply(w, nil, err)
}

func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) {
	list, err := s.b.Namespaces(r.PathValue("tenant"))
	if errors.Is(err, broker.ErrTenantNotFound) {
		err = errStatus(http.StatusNotFound, "Tenant not found")
	}
	reply(w, list, err)
}

// createNamespace creates a namespace with the policies of its body
// (namespacecreation.go) and its bundles (creationBundles). A body that
// does not parse is a 400, a value out of range a 412, and both create
// nothing.
func (s *Server) createNamespace(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var body namespaceCreation
	if err == nil {
		body, err = readNamespaceCreation(r)
	}
	topics := map[string]broker.TopicName{}
	for topic := range body.AuthPolicies.DestinationAuth {
		if err == nil {
			topics[topic], err = broker.ParseTopicName(topic)
		}
	}
	var change func(*broker.Policies)
	if err == nil {
		change, err = s.creationChange(body)
	}
	var numBundles int
	var boundaries []uint32
	if err == nil {
		numBundles, boundaries, err = creationBundles(body, s.b.DefaultNamespaceBundles())
	}
	if err == nil {
		err = s.b.CreateNamespace(ns)
	}
	if err == nil {
		s.b.SetNamespaceBundles(ns, numBundles, boundaries)
		err = s.b.UpdateNamespacePolicies(ns, change)
		for role, actions := range body.AuthPolicies.NamespaceAuth {
			err = errors.Join(err, s.b.GrantNamespacePermission(ns, role, actions))
		}
		for topic, grants := range body.AuthPolicies.DestinationAuth {
			for role, actions := range grants {
				s.b.GrantTopicPermission(topics[topic], role, actions)
			}
		}
	}
	reply(w, nil, err)
}

// getNamespacePolicies answers the namespace's policies document: the
// cluster, its bundles, each policy the namespace sets under Pulsar's JSON name, and the
// maps Pulsar always writes (the rates by cluster, the backlog quotas by
// type), empty when unset.
func (s *Server) getNamespacePolicies(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var pol broker.Policies
	if err == nil {
		pol, err = s.b.NamespacePolicies(ns)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	doc := map[string]any{"replication_clusters": []string{s.b.ClusterName()}, "backlog_quota_map": quotaMap(pol)}
	for _, p := range policyEndpoints {
		if v, set := p.value(pol); set && p.jsonName != "" {
			doc[p.jsonName] = v
		} else if p.docWhenUnset && p.jsonName != "" {
			doc[p.jsonName] = p.unset()
		}
	}
	byCluster := func(v any, set bool) map[string]any {
		if !set {
			return map[string]any{}
		}
		return map[string]any{s.b.ClusterName(): v}
	}
	doc["topicDispatchRate"] = byCluster(dispatchRateValue(pol.DispatchRate))
	doc["clusterDispatchRate"] = doc["topicDispatchRate"]
	doc["subscriptionDispatchRate"] = byCluster(dispatchRateValue(pol.SubscriptionDispatchRate))
	doc["replicatorDispatchRate"] = byCluster(dispatchRateValue(pol.ReplicatorDispatchRate))
	doc["publishMaxMessageRate"] = byCluster(publishRateEndpoint.value(pol))
	doc["bundles"] = s.bundlesOf(ns)
	doc["properties"] = propertiesOf(pol)
	s.addSchemaPolicies(doc, pol)
	s.namespaceDocExtras(doc, ns, pol)
	if pol.AutoTopicCreation != nil {
		doc["autoTopicCreationOverride"] = autoTopicCreationOut(*pol.AutoTopicCreation)
	}
	reply(w, doc, nil)
}

// deleteNamespace deletes a namespace without topics; with ?force=true,
// which the broker refuses unless forceDeleteNamespaceAllowed is set, its
// topics go with it.
func (s *Server) deleteNamespace(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	force := boolParam(r, "force")
	if err == nil && force && !s.forceDeleteAllowed("forceDeleteNamespaceAllowed") {
		err = errStatus(http.StatusMethodNotAllowed, "Broker doesn't allow forced deletion of namespaces")
	}
	if err == nil {
		err = s.b.DeleteNamespace(ns, force)
	}
	if errors.Is(err, broker.ErrNamespaceNotFound) {
		// Pulsar's deletion names the namespace, with a full stop.
		err = errStatus(http.StatusNotFound, "Namespace "+ns+" does not exist.")
	}
	reply(w, nil, err)
}

// namespaceTopics lists the namespace's topics, partitions included, for
// the HTTP lookup service (mode PERSISTENT, NON_PERSISTENT or ALL). Unlike
// the binary protocol's answer, an unknown namespace is a 404.
func (s *Server) namespaceTopics(w http.ResponseWriter, r *http.Request) {
	ns, ok := s.existingNamespace(w, r)
	if !ok {
		return
	}
	mode := broker.TopicsPersistent
	switch r.URL.Query().Get("mode") {
	case "NON_PERSISTENT":
		mode = broker.TopicsNonPersistent
	case "ALL":
		mode = broker.TopicsAll
	}
	reply(w, s.b.TopicsOfNamespace(ns, mode), nil)
}

// existingNamespace reads the namespace of the request's path and checks it
// exists; otherwise it answers the error and returns false.
func (s *Server) existingNamespace(w http.ResponseWriter, r *http.Request) (string, bool) {
	ns, err := namespaceFromPath(r)
	if err == nil && !s.b.NamespaceExists(ns) {
		err = broker.ErrNamespaceNotFound
	}
	if err != nil {
		reply(w, nil, err)
		return "", false
	}
	return ns, true
}
