package admin

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// In a cluster, a topic's admin calls belong to the broker owning its
// bundle, as Pulsar's validateTopicOwnership has them: another broker
// answers 307 to the owner's web service, the same path, with the
// authoritative flag of the lookup (a bundle nobody owns is assigned first,
// and with the modular load manager a broker that is not the leader sends
// the request to the leader). A lone broker owns everything.

// clustered reports whether the broker has peers.
func (s *Server) clustered() bool { return len(s.b.Brokers()) > 1 }

// redirectToOwner answers 307 to the owner of the request's topic when
// another broker serves it, and reports whether it did. Partitioned-topic
// metadata and the partitioned topics' aggregate calls are answered
// wherever they arrive.
func (s *Server) redirectToOwner(w http.ResponseWriter, r *http.Request) bool {
	if !s.clustered() || strings.HasPrefix(r.URL.Path, "/lookup/") ||
		strings.HasSuffix(r.URL.Path, "/partitions") || strings.Contains(r.URL.Path, "/partitioned-") {
		return false
	}
	topic, err := topicFromPath(r)
	if err != nil {
		return false
	}
	if n, err := s.b.PartitionedMetadata(topic); err == nil && n > 0 {
		return false
	}
	res, err := s.b.Lookup(topic, r.URL.Query().Get("authoritative") == "true")
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return true
	}
	if res.Self {
		return false
	}
	redirectTo(w, r, res)
	return true
}

// redirectTo answers 307 to the same path on the broker of res, with its
// authoritative flag.
func redirectTo(w http.ResponseWriter, r *http.Request, res broker.LookupResult) {
	q := r.URL.Query()
	q.Set("authoritative", strconv.FormatBool(res.Authoritative))
	u := res.Broker.WebURL + r.URL.Path + "?" + q.Encode()
	http.Redirect(w, r, u, http.StatusTemporaryRedirect)
}

// lookupAnswer answers the HTTP lookup of a topic: 200 with the owner's
// URLs, or 307 to the broker to ask next.
func (s *Server) lookupAnswer(w http.ResponseWriter, r *http.Request, topic string) bool {
	if !s.clustered() {
		return false
	}
	res, err := s.b.Lookup(topic, r.URL.Query().Get("authoritative") == "true")
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return true
	}
	if res.Redirect {
		redirectTo(w, r, res)
		return true
	}
	if res.Self {
		return false
	}
	reply(w, lookupData(res.Broker.URL, res.Broker.URLTLS, res.Broker.WebURL, ""), nil)
	return true
}

// routeBundles serves the namespace bundles: their list, the bundle of a
// topic, unloads of a bundle or of a whole namespace, and bundle splits
// (split.go).
func (s *Server) routeBundles() {
	m := s.mux
	m.HandleFunc("GET /admin/v2/namespaces/{tenant}/{ns}/bundles", s.namespaceBundles)
	m.HandleFunc("PUT /admin/v2/namespaces/{tenant}/{ns}/{bundle}/unload", s.unloadBundle)
	m.HandleFunc("PUT /admin/v2/namespaces/{tenant}/{ns}/{bundle}/split", s.splitBundle)
	m.HandleFunc("PUT /admin/v2/namespaces/{tenant}/{ns}/unload", s.unloadNamespace)
}

// bundlesData is Pulsar's BundlesData: the boundaries and their count.
type bundlesData struct {
	Boundaries []string `json:"boundaries"`
	NumBundles int      `json:"numBundles"`
}

// bundlesOf returns the bundles of ns as Pulsar writes them.
func (s *Server) bundlesOf(ns string) bundlesData {
	bs := s.b.Bundles(ns)
	d := bundlesData{NumBundles: len(bs)}
	for _, bd := range bs {
		d.Boundaries = append(d.Boundaries, strings.Split(bd.Range(), "_")[0])
	}
	if len(bs) > 0 {
		d.Boundaries = append(d.Boundaries, strings.Split(bs[len(bs)-1].Range(), "_")[1])
	}
	return d
}

func (s *Server) namespaceBundles(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil && !s.b.NamespaceExists(ns) {
		err = errStatus(http.StatusNotFound, "Namespace does not exist")
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, s.bundlesOf(ns), nil)
}

// unloadBundle unloads one bundle at its owner (307 there from any other
// broker; with the modular load manager the redirect drops the
// destination, which the leader has noted already, as Pulsar's does).
func (s *Server) unloadBundle(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil && !s.b.NamespaceExists(ns) {
		err = errStatus(http.StatusNotFound, "Namespace not found")
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	bd, err := broker.ParseBundle(ns, r.PathValue("bundle"))
	if err != nil {
		httpError(w, http.StatusPreconditionFailed, err.Error())
		return
	}
	err = s.b.UnloadBundle(bd, r.URL.Query().Get("destinationBroker"))
	if errors.Is(err, broker.ErrNotOwner) {
		if owner, ok := s.b.BundleOwner(bd); ok {
			q := r.URL.Query()
			q.Set("authoritative", strconv.FormatBool(s.redirectsAuthoritatively()))
			http.Redirect(w, r, owner.WebURL+r.URL.Path+"?"+q.Encode(), http.StatusTemporaryRedirect)
			return
		}
	}
	if errors.Is(err, broker.ErrNotAllowed) {
		httpError(w, http.StatusPreconditionFailed, err.Error())
		return
	}
	reply(w, nil, err)
}

// unloadNamespace unloads every bundle of a namespace that this broker
// owns, and asks each other owner to unload its own.
func (s *Server) unloadNamespace(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil && !s.b.NamespaceExists(ns) {
		err = errStatus(http.StatusNotFound, "Namespace does not exist")
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	for _, bd := range s.b.Bundles(ns) {
		err := s.b.UnloadBundle(bd, "")
		if errors.Is(err, broker.ErrNotOwner) {
			owner, ok := s.b.BundleOwner(bd)
			if !ok {
				continue
			}
			req, rerr := http.NewRequestWithContext(r.Context(), http.MethodPut,
				owner.WebURL+"/admin/v2/namespaces/"+ns+"/"+bd.Range()+"/unload?authoritative=true", nil)
			if rerr != nil {
				reply(w, nil, rerr)
				return
			}
			req.Header = r.Header.Clone()
			resp, rerr := http.DefaultClient.Do(req)
			if rerr != nil {
				httpError(w, http.StatusInternalServerError, rerr.Error())
				return
			}
			resp.Body.Close()
			continue
		}
		if err != nil {
			reply(w, nil, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}
