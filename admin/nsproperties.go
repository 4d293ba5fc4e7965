package admin

import (
	"maps"
	"net/http"

	"github.com/pulsarsim/pulsarsim/broker"
)

// A namespace's properties (pulsar-admin namespaces set-property,
// get-property, remove-property, set-properties, get-properties,
// clear-properties), kept with its policies, with Pulsar 4.0.8's answers: a
// property's value as bare text (nothing when unset), the map as JSON ({}
// when empty, and always in the namespace's policies document).

func (s *Server) routeNamespaceProperties() {
	m := s.mux
	const ns = "/admin/v2/namespaces/{tenant}/{ns}/"
	m.HandleFunc("GET "+ns+"properties", s.namespaceProperties)
	m.HandleFunc("PUT "+ns+"properties", s.setNamespaceProperties)
	m.HandleFunc("DELETE "+ns+"properties", s.clearNamespaceProperties)
}

// namespacePolicies reads the request's namespace and its policies.
func (s *Server) namespacePolicies(r *http.Request) (string, broker.Policies, error) {
	ns, err := namespaceFromPath(r)
	var pol broker.Policies
	if err == nil {
		pol, err = s.b.NamespacePolicies(ns)
	}
	return ns, pol, err
}

// writeText answers a property's value as Pulsar does: the bare string,
// or an empty body when there is none.
func writeText(w http.ResponseWriter, v string, ok bool) {
	if !ok {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(v))
}

func (s *Server) namespaceProperty(w http.ResponseWriter, r *http.Request) {
	_, pol, err := s.namespacePolicies(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	v, ok := pol.NamespaceProperties[r.PathValue("key")]
	writeText(w, v, ok)
}

// updateProperties applies change to a copy of the namespace's properties.
func (s *Server) updateProperties(r *http.Request, change func(map[string]string)) error {
	ns, err := namespaceFromPath(r)
	if err != nil {
		return err
	}
	return s.b.UpdateNamespacePolicies(ns, func(p *broker.Policies) {
		props := maps.Clone(p.NamespaceProperties)
		if props == nil {
			props = map[string]string{}
		}
		change(props)
		p.NamespaceProperties = props
	})
}

func (s *Server) setNamespaceProperty(w http.ResponseWriter, r *http.Request) {
	reply(w, nil, s.updateProperties(r, func(p map[string]string) { p[r.PathValue("key")] = r.PathValue("value") }))
}

// removeNamespaceProperty removes a property and answers its value.
func (s *Server) removeNamespaceProperty(w http.ResponseWriter, r *http.Request) {
	var old string
	var had bool
	err := s.updateProperties(r, func(p map[string]string) {
		old, had = p[r.PathValue("key")]
		delete(p, r.PathValue("key"))
	})
	if err != nil {
		reply(w, nil, err)
		return
	}
	writeText(w, old, had)
}

func (s *Server) namespaceProperties(w http.ResponseWriter, r *http.Request) {
	_, pol, err := s.namespacePolicies(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, propertiesOf(pol), nil)
}

// propertiesOf returns a namespace's properties, an empty map for none.
func propertiesOf(pol broker.Policies) map[string]string {
	if pol.NamespaceProperties == nil {
		return map[string]string{}
	}
	return pol.NamespaceProperties
}

// setNamespaceProperties adds the body's properties to the namespace's.
func (s *Server) setNamespaceProperties(w http.ResponseWriter, r *http.Request) {
	var body map[string]string
	err := decodeJSON(r, &body)
	if err == nil && body == nil {
		err = errStatus(http.StatusBadRequest, "The request entity cannot be empty.")
	}
	if err == nil {
		err = s.updateProperties(r, func(p map[string]string) { maps.Copy(p, body) })
	}
	reply(w, nil, err)
}

func (s *Server) clearNamespaceProperties(w http.ResponseWriter, r *http.Request) {
	reply(w, nil, s.updateProperties(r, func(p map[string]string) { clear(p) }))
}

// nsPropertyRoute returns the handler and pattern of a request for one
// property (…/property/{key}, …/property/{key}/{value}), with the path
// values set, or nil. It is routed here rather than by the mux: as mux
// patterns they would be as specific as the topic routes.
func (s *Server) nsPropertyRoute(r *http.Request, parts []string) (http.Handler, string) {
	const ns = "/admin/v2/namespaces/{tenant}/{ns}/"
	if len(parts) < 7 || parts[5] != "property" {
		return nil, ""
	}
	names := map[int]string{3: "tenant", 4: "ns", 6: "key"}
	var h http.HandlerFunc
	var pattern string
	switch {
	case len(parts) == 7 && r.Method == http.MethodGet:
		h, pattern = s.namespaceProperty, ns+"property/{key}"
	case len(parts) == 7 && r.Method == http.MethodDelete:
		h, pattern = s.removeNamespaceProperty, ns+"property/{key}"
	case len(parts) == 8 && r.Method == http.MethodPut:
		h, pattern = s.setNamespaceProperty, ns+"property/{key}/{value}"
		names[7] = "value"
	default:
		return nil, ""
	}
	if !setPathValues(r, parts, names) {
		return nil, ""
	}
	return h, r.Method + " " + pattern
}
