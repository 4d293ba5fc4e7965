package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/pulsarsim/pulsarsim/auth"
	"github.com/pulsarsim/pulsarsim/broker"
)

// Authentication and authorization of admin requests, as Pulsar's web
// service does them: the request's role comes from the provider it names, or
// the first that accepts it, or else the anonymous role; then the route
// decides what the role must be. The answers (status and reason) are those
// Pulsar 4.0.8 gave to the same requests (FIDELITY.md).

// accessKind is what a route requires of the role.
type accessKind int

const (
	accessNone        accessKind = iota // nothing (health, unknown paths)
	accessSuperUser                     // tenant-level operations
	accessTenantAdmin                   // tenant and namespace administration
	accessNamespace                     // listing a namespace's topics: a grant on it, or admin
	accessTopic                         // a topic operation: op decides
	accessSuper                         // broker and cluster operations: super-users only
)

// access is a route's requirement, with Pulsar's name of the operation for
// the refusal's reason.
type access struct {
	kind accessKind
	op   auth.Operation
	name string
}

// serveSecured routes r, and serves it when its role may do what the route
// does.
func (s *Server) serveSecured(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.nsPermissionRoute(r)
	if h == nil && (strings.HasPrefix(r.URL.Path, "/admin/v2/clusters/") || strings.HasPrefix(r.URL.Path, "/admin/v2/resource-quotas/")) {
		// The routes under a cluster and the resource quotas have a mux of
		// their own: as patterns of the main one, they would be as
		// specific as the topic routes.
		if _, p := s.clusterMux.Handler(r); p != "" {
			h, pattern = s.clusterMux, p
		}
	}
	if h == nil {
		_, pattern = s.mux.Handler(r)
		h = s.mux
		if unknownDomain(r, pattern) {
			h = http.HandlerFunc(notFoundRoute)
		}
	}
	if s.authorize(w, r, pattern) {
		h.ServeHTTP(w, r)
	}
}

// unknownDomain reports whether r matched a topic route (pattern
// /admin/v2/{domain}/…) with a first segment that is no topic domain:
// Jersey has no route for it (/admin/v2/brokers/a/b, /admin/v2/foo/t/n),
// so it is an unknown route, not a namespace to look up.
func unknownDomain(r *http.Request, pattern string) bool {
	if !strings.Contains(pattern, " /admin/v2/{domain}/") && !strings.HasPrefix(pattern, "/admin/v2/{domain}/") {
		return false
	}
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/admin/v2/"), "/", 2)
	return parts[0] != "persistent" && parts[0] != "non-persistent"
}

// notFoundRoute answers a path no route serves.
func notFoundRoute(w http.ResponseWriter, r *http.Request) {
	httpError(w, http.StatusNotFound, "Not found: "+r.URL.Path)
}

// nsPermissionPattern is the grant and revoke route on a namespace. It is
// routed here rather than by the mux: as a mux pattern it would be as
// specific as the topic routes ending in /partitions or /terminate.
const nsPermissionPattern = "/admin/v2/namespaces/{tenant}/{ns}/permissions/{role}"

// nsPermissionRoute returns the handler and pattern of a POST or DELETE on
// nsPermissionPattern, with the path values set, or nil.
func (s *Server) nsPermissionRoute(r *http.Request) (http.Handler, string) {
	parts := strings.Split(strings.TrimPrefix(r.URL.EscapedPath(), "/"), "/")
	if h, pattern := s.nsSubscriptionRoute(r, parts); h != nil {
		return h, pattern
	}
	if len(parts) != 7 || parts[0] != "admin" || parts[1] != "v2" || parts[2] != "namespaces" || parts[5] != "permissions" {
		return nil, ""
	}
	var h http.HandlerFunc
	switch r.Method {
	case http.MethodPost:
		h = s.grantNamespacePermission
	case http.MethodDelete:
		h = s.revokeNamespacePermission
	default:
		return nil, ""
	}
	for i, name := range map[int]string{3: "tenant", 4: "ns", 6: "role"} {
		v, err := url.PathUnescape(parts[i])
		if err != nil {
			return nil, ""
		}
		r.SetPathValue(name, v)
	}
	return h, r.Method + " " + nsPermissionPattern
}

// authorize authenticates r and checks its role against the route pattern;
// it answers the refusal itself and returns false when r may not go on.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, pattern string) bool {
	if !s.b.AuthenticationEnabled() && !s.b.AuthorizationEnabled() {
		return true
	}
	id, err := s.b.AuthenticateHTTP(r)
	if err != nil {
		// Pulsar's web server answers with its HTML error page here.
		w.Header().Set("Content-Type", "text/html;charset=ISO-8859-1")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "<html><head><title>Error 401 Authentication required</title></head>"+
			"<body><h2>HTTP ERROR 401 Authentication required</h2></body></html>\n")
		return false
	}
	if !s.b.AuthorizationEnabled() {
		return true
	}
	a := accessFor(pattern)
	vars := pathValues(pattern, r)
	ns := vars["tenant"] + "/" + vars["ns"]
	switch a.kind {
	case accessSuperUser:
		if !s.b.IsSuperUser(id.Role) {
			// A browser asks for basic credentials (the view's users).
			w.Header().Set("WWW-Authenticate", `Basic realm="pulsarsim"`)
			httpError(w, http.StatusUnauthorized, fmt.Sprintf("Unauthorized to validateBothTenantOperationAndSuperUser"+
				" for originalPrincipal [null] and clientAppId [%s] about operation [%s] ", id.Role, a.name))
			return false
		}
	case accessSuper:
		if !s.b.IsSuperUser(id.Role) {
			httpError(w, http.StatusUnauthorized, "This operation requires super-user access")
			return false
		}
	case accessTenantAdmin:
		if !s.b.IsTenantAdmin(id.Role, vars["tenant"]) {
			if vars["ns"] == "" {
				httpError(w, http.StatusForbidden, fmt.Sprintf("Unauthorized to validateTenantOperation for operation [%s] on tenant [%s]", a.name, vars["tenant"]))
			} else {
				httpError(w, http.StatusForbidden, fmt.Sprintf("Unauthorized to validateNamespaceOperation for operation [%s] on namespace [%s]", a.name, ns))
			}
			return false
		}
	case accessNamespace:
		if !s.b.AllowedNamespace(id.Role, ns) {
			httpError(w, http.StatusForbidden, fmt.Sprintf("Unauthorized to validateNamespaceOperation for operation [%s] on namespace [%s]", a.name, ns))
			return false
		}
	case accessTopic:
		domain := vars["domain"]
		if domain == "" {
			domain = "persistent"
		}
		tn, err := broker.ParseTopicName(domain + "://" + ns + "/" + vars["topic"])
		if err != nil {
			return true // the handler answers the bad name
		}
		if !s.b.AllowedTopic(id.Role, tn, a.op) {
			httpError(w, http.StatusUnauthorized, fmt.Sprintf("Unauthorized to validateTopicOperation for operation [%s] on topic [%s]", a.name, tn))
			return false
		}
	}
	return true
}

// accessFor maps a route pattern ("METHOD /path/{var}...") to what it needs.
func accessFor(pattern string) access {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok { // a pattern for every method
		method, path = "", pattern
	}
	switch {
	case path == "/admin/v2/tenants":
		return access{accessSuperUser, 0, "LIST_TENANTS"}
	case path == backlogQuotaCheckPath:
		return access{accessSuperUser, 0, "CHECK_BACKLOG_QUOTA"}
	case strings.HasPrefix(path, "/admin/v2/tenants/"):
		switch method {
		case "PUT":
			return access{accessSuperUser, 0, "CREATE_TENANT"}
		case "POST":
			return access{accessSuperUser, 0, "UPDATE_TENANT"}
		case "DELETE":
			return access{accessSuperUser, 0, "DELETE_TENANT"}
		}
		return access{accessTenantAdmin, 0, "GET_TENANT"}
	case path == "/admin/v2/namespaces/{tenant}":
		return access{accessTenantAdmin, 0, "LIST_NAMESPACES"}
	case path == "/admin/v2/namespaces/{tenant}/{ns}/topics", path == "/admin/v2/{domain}/{tenant}/{ns}",
		path == "/admin/v2/{domain}/{tenant}/{ns}/partitioned":
		return access{accessNamespace, 0, "GET_TOPICS"}
	case strings.HasPrefix(path, "/admin/v2/namespaces/"):
		return access{accessTenantAdmin, 0, namespaceOperation(method, path)}
	case path == "/admin/v2/clusters" || path == "/admin/v2/brokers/ready":
		return access{kind: accessNone}
	case superUserRoute(path):
		return access{kind: accessSuper}
	case strings.HasPrefix(path, "/lookup/v2/"):
		return access{accessTopic, auth.OpLookup, "LOOKUP"}
	case strings.HasPrefix(path, "/admin/v2/"):
		return topicAccess(method, path)
	case strings.HasPrefix(path, "/view/"):
		// The web view shows every topic's messages: super-users only.
		return access{accessSuperUser, 0, "VIEW"}
	}
	return access{kind: accessNone}
}

func namespaceOperation(method, path string) string {
	switch {
	case strings.Contains(path, "/permissions"):
		return map[string]string{"GET": "GET_PERMISSION", "POST": "GRANT_PERMISSION", "DELETE": "REVOKE_PERMISSION"}[method]
	case path == "/admin/v2/namespaces/{tenant}/{ns}":
		return map[string]string{"GET": "GET_POLICIES", "PUT": "CREATE_NAMESPACE", "DELETE": "DELETE_NAMESPACE"}[method]
	}
	if method == "GET" {
		return "GET_POLICY"
	}
	return "SET_POLICY"
}

// topicAccess is the operation of a topic route (including schemas).
func topicAccess(method, path string) access {
	last := path[strings.LastIndex(path, "/")+1:]
	switch {
	case strings.Contains(path, "/permissions"):
		return access{accessTopic, auth.OpAdmin, map[string]string{"GET": "GET_PERMISSION", "POST": "GRANT_PERMISSION", "DELETE": "REVOKE_PERMISSION"}[method]}
	case method == "GET" && last == "partitions":
		return access{accessTopic, auth.OpLookup, "LOOKUP"}
	case method == "GET" && (last == "stats" || last == "partitioned-stats" || last == "internalStats" ||
		last == "partitioned-internalStats"):
		return access{accessTopic, auth.OpLookup, "GET_STATS"}
	case method == "GET" && strings.HasPrefix(path, "/admin/v2/schemas/"):
		return access{accessTopic, auth.OpLookup, "GET_SCHEMA"}
	case method == "POST" && strings.HasPrefix(path, "/admin/v2/schemas/"):
		return access{accessTopic, auth.OpProduce, "PRODUCE"}
	case method == "GET" && last == "subscriptions":
		return access{accessTopic, auth.OpConsume, "GET_SUBSCRIPTIONS"}
	case method == "GET" && (strings.Contains(path, "/position/") || strings.Contains(path, "/ledger/") ||
		strings.Contains(path, "/messageid/") || last == "examinemessage" || last == "lastMessageId"):
		// Pulsar checks PEEK_MESSAGES for every read of stored messages
		// or their ids.
		return access{accessTopic, auth.OpConsume, "PEEK_MESSAGES"}
	case strings.Contains(path, "/subscription/{sub}"):
		if method == "DELETE" {
			return access{accessTopic, auth.OpConsume, "UNSUBSCRIBE"}
		}
		return access{accessTopic, auth.OpConsume, "SUBSCRIBE"}
	}
	return access{accessTopic, auth.OpAdmin, strings.ToUpper(method) + "_TOPIC"}
}

// pathValues matches the request path against the pattern's path and
// returns the values of its {name} segments.
func pathValues(pattern string, r *http.Request) map[string]string {
	path := pattern[strings.Index(pattern, " ")+1:]
	vals := map[string]string{}
	ps := strings.Split(strings.Trim(path, "/"), "/")
	rs := strings.Split(strings.Trim(r.URL.EscapedPath(), "/"), "/")
	for i, p := range ps {
		if i >= len(rs) {
			break
		}
		if strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}") {
			v, err := url.PathUnescape(rs[i])
			if err != nil {
				v = rs[i]
			}
			vals[strings.Trim(p, "{}.")] = v
		}
	}
	return vals
}

// ---- permission and tenant admin endpoints

func (s *Server) routeSecurity() {
	m := s.mux
	m.HandleFunc("POST /admin/v2/tenants/{tenant}", s.updateTenant)
	m.HandleFunc("GET /admin/v2/namespaces/{tenant}/{ns}/permissions", s.namespacePermissions)
	const topic = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
	m.HandleFunc("GET "+topic+"/permissions", s.topicPermissions)
	m.HandleFunc("POST "+topic+"/permissions/{role}", s.grantTopicPermission)
	m.HandleFunc("DELETE "+topic+"/permissions/{role}", s.revokeTopicPermission)
}

// tenantInfo is Pulsar's TenantInfo body.
type tenantInfo struct {
	AdminRoles      []string `json:"adminRoles"`
	AllowedClusters []string `json:"allowedClusters"`
}

func (s *Server) updateTenant(w http.ResponseWriter, r *http.Request) {
	var info tenantInfo
	if err := decodeJSON(r, &info); err != nil {
		reply(w, nil, err)
		return
	}
	tenant := r.PathValue("tenant")
	if err := s.b.SetTenantAdminRoles(tenant, info.AdminRoles); err != nil {
		httpError(w, http.StatusNotFound, "Tenant "+tenant+" not found")
		return
	}
	if len(info.AllowedClusters) > 0 {
		_ = s.b.SetTenantAllowedClusters(tenant, info.AllowedClusters)
	}
	reply(w, nil, nil)
}

func (s *Server) namespacePermissions(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var perms map[string][]string
	if err == nil {
		perms, err = s.b.NamespacePermissions(ns)
	}
	reply(w, perms, err)
}

// readActions reads a grant's body, a JSON array of actions.
func readActions(r *http.Request) ([]string, error) {
	body, err := readBody(r, 1<<16)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return nil, errStatus(http.StatusBadRequest, "Actions should not be null")
	}
	var actions []string
	if err := json.Unmarshal(body, &actions); err != nil {
		return nil, errStatus(http.StatusBadRequest, err.Error())
	}
	return actions, nil
}

func (s *Server) grantNamespacePermission(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	actions, err := readActions(r)
	if err == nil {
		if err = s.b.GrantNamespacePermission(ns, r.PathValue("role"), actions); err != nil {
			err = errStatus(http.StatusNotFound, "Topic's namespace does not exist")
		}
	}
	reply(w, nil, err)
}

func (s *Server) revokeNamespacePermission(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil {
		err = s.b.RevokeNamespacePermission(ns, r.PathValue("role"))
	}
	reply(w, nil, err)
}

// existingTopic returns the request's topic, or a 404 when it (or, for a
// partitioned topic, its metadata) does not exist, as Pulsar answers.
func (s *Server) existingTopic(r *http.Request) (broker.TopicName, error) {
	name, err := topicFromPath(r)
	if err != nil {
		return broker.TopicName{}, err
	}
	tn, err := broker.ParseTopicName(name)
	if err != nil {
		return tn, err
	}
	if _, ok := s.b.Topic(name); !ok {
		if n, _ := s.b.PartitionedMetadata(name); n > 0 {
			return tn, nil
		}
		return tn, errStatus(http.StatusNotFound, "Topic "+name+" not found")
	}
	return tn, nil
}

func (s *Server) topicPermissions(w http.ResponseWriter, r *http.Request) {
	tn, err := s.existingTopic(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	// Pulsar answers the namespace's grants merged with the topic's.
	merged, _ := s.b.NamespacePermissions(tn.NamespaceName())
	if merged == nil {
		merged = map[string][]string{}
	}
	for role, actions := range s.b.TopicPermissions(tn) {
		merged[role] = union(merged[role], actions)
	}
	reply(w, merged, nil)
}

func union(a, b []string) []string {
	set := map[string]bool{}
	for _, x := range append(append([]string{}, a...), b...) {
		set[x] = true
	}
	out := make([]string, 0, len(set))
	for x := range set {
		out = append(out, x)
	}
	sort.Strings(out)
	return out
}

func (s *Server) grantTopicPermission(w http.ResponseWriter, r *http.Request) {
	tn, err := s.existingTopic(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	actions, err := readActions(r)
	if err == nil {
		s.b.GrantTopicPermission(tn, r.PathValue("role"), actions)
	}
	reply(w, nil, err)
}

func (s *Server) revokeTopicPermission(w http.ResponseWriter, r *http.Request) {
	tn, err := s.existingTopic(r)
	if err == nil {
		s.b.RevokeTopicPermission(tn, r.PathValue("role"))
	}
	reply(w, nil, err)
}
