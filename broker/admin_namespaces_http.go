package broker

import (
	"net/http"
	"time"

	"github.com/pulsarsim/pulsarsim/protocol/pb"
)

// Admin HTTP handlers for tenants, namespaces and namespace policies.

func (a *adminAPI) listTenants(w http.ResponseWriter, _ *http.Request) {
	reply(w, a.b.Tenants(), nil)
}

func (a *adminAPI) createTenant(w http.ResponseWriter, r *http.Request) {
	reply(w, nil, namespaceStatus(a.b.CreateTenant(r.PathValue("tenant"))))
}

func (a *adminAPI) getTenant(w http.ResponseWriter, r *http.Request) {
	for _, t := range a.b.Tenants() {
		if t == r.PathValue("tenant") {
			reply(w, map[string]any{"adminRoles": []string{}, "allowedClusters": []string{a.b.cfg.clusterName}}, nil)
			return
		}
	}
	reply(w, nil, namespaceStatus(ErrTenantNotFound))
}

func (a *adminAPI) deleteTenant(w http.ResponseWriter, r *http.Request) {
	reply(w, nil, namespaceStatus(a.b.DeleteTenant(r.PathValue("tenant"))))
}

func (a *adminAPI) listNamespaces(w http.ResponseWriter, r *http.Request) {
	list, err := a.b.Namespaces(r.PathValue("tenant"))
	reply(w, list, namespaceStatus(err))
}

func (a *adminAPI) createNamespace(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil {
		err = namespaceStatus(a.b.CreateNamespace(ns))
	}
	reply(w, nil, err)
}

// getNamespacePolicies answers with the few policies pulsarsim keeps.
func (a *adminAPI) getNamespacePolicies(w http.ResponseWriter, r *http.Request) {
	ns, ok := a.existingNamespace(w, r)
	if !ok {
		return
	}
	pol := map[string]any{"replication_clusters": []string{a.b.cfg.clusterName}}
	if ttl := a.b.namespaceTTL(ns); ttl > 0 {
		pol["message_ttl_in_seconds"] = int(ttl / time.Second)
	}
	reply(w, pol, nil)
}

func (a *adminAPI) deleteNamespace(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil {
		err = namespaceStatus(a.b.DeleteNamespace(ns, boolParam(r, "force")))
	}
	reply(w, nil, err)
}

// namespaceTopics lists the namespace's topics, partitions included, for
// the HTTP lookup service (mode PERSISTENT, NON_PERSISTENT or ALL). Unlike
// the binary protocol's answer, an unknown namespace is a 404.
func (a *adminAPI) namespaceTopics(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil && !a.b.NamespaceExists(ns) {
		err = namespaceStatus(ErrNamespaceNotFound)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	mode := pb.CommandGetTopicsOfNamespace_PERSISTENT
	switch r.URL.Query().Get("mode") {
	case "NON_PERSISTENT":
		mode = pb.CommandGetTopicsOfNamespace_NON_PERSISTENT
	case "ALL":
		mode = pb.CommandGetTopicsOfNamespace_ALL
	}
	reply(w, a.b.TopicsOfNamespace(ns, mode), nil)
}

// namespaceTTL returns the namespace's own message TTL, 0 if none.
func (b *Broker) namespaceTTL(ns string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nsTTL[ns]
}

func (a *adminAPI) getNamespaceTTL(w http.ResponseWriter, r *http.Request) {
	ns, ok := a.existingNamespace(w, r)
	if !ok {
		return
	}
	reply(w, int(a.b.namespaceTTL(ns)/time.Second), nil)
}

func (a *adminAPI) setNamespaceTTL(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	secs, err := readInt(r)
	switch {
	case err != nil:
	case !a.b.NamespaceExists(ns):
		err = namespaceStatus(ErrNamespaceNotFound)
	case secs < 0:
		err = errStatus(http.StatusPreconditionFailed, "Invalid value for message TTL, message TTL must >= 0")
	default:
		a.b.SetNamespaceMessageTTL(ns, time.Duration(secs)*time.Second)
	}
	reply(w, nil, err)
}

func (a *adminAPI) removeNamespaceTTL(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil {
		if !a.b.NamespaceExists(ns) {
			err = namespaceStatus(ErrNamespaceNotFound)
		} else {
			a.b.SetNamespaceMessageTTL(ns, 0)
		}
	}
	reply(w, nil, err)
}

// existingNamespace reads the namespace of the request's path and checks it
// exists; otherwise it answers the error and returns false.
func (a *adminAPI) existingNamespace(w http.ResponseWriter, r *http.Request) (string, bool) {
	ns, err := namespaceFromPath(r)
	if err == nil && !a.b.NamespaceExists(ns) {
		err = namespaceStatus(ErrNamespaceNotFound)
	}
	if err != nil {
		reply(w, nil, err)
		return "", false
	}
	return ns, true
}
