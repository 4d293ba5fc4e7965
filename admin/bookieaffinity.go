package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// A namespace's bookie affinity group (.../persistence/bookieAffinity), one
// of its local policies, answered as Pulsar 4.0.8 answers it: 404 "Namespace
// local-policies does not exist" until any local policy is written, then 204
// while none is set, and the group with the fields that are set.

// bookieAffinityClass is the Java class Jackson names when a body is not
// a bookie affinity group.
const bookieAffinityClass = "org.apache.pulsar.common.policies.data.impl.BookieAffinityGroupDataImpl"

// bookieAffinityJSON is BookieAffinityGroupData.
type bookieAffinityJSON struct {
	Primary   *string `json:"bookkeeperAffinityGroupPrimary,omitempty"`
	Secondary *string `json:"bookkeeperAffinityGroupSecondary,omitempty"`
}

func (s *Server) routeBookieAffinity() {
	const path = "/admin/v2/namespaces/{tenant}/{ns}/persistence/bookieAffinity"
	s.mux.HandleFunc("GET "+path, s.getBookieAffinity)
	s.mux.HandleFunc("POST "+path, s.setBookieAffinity)
	s.mux.HandleFunc("DELETE "+path, s.removeBookieAffinity)
}

// noNamespace is how these endpoints word a missing namespace
// (namespaceMissing).
var noNamespace = new("Namespace not found")

func (s *Server) getBookieAffinity(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var g *broker.BookieAffinityGroup
	if err == nil {
		g, err = s.b.BookieAffinity(ns)
	}
	switch {
	case errors.Is(err, broker.ErrNoLocalPolicies):
		reply(w, nil, errStatus(http.StatusNotFound, err.Error()))
	case err != nil:
		reply(w, nil, namespaceMissing(err, noNamespace))
	case g == nil:
		w.WriteHeader(http.StatusNoContent)
	default:
		reply(w, bookieAffinityJSON{Primary: g.Primary, Secondary: g.Secondary}, nil)
	}
}

func (s *Server) setBookieAffinity(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var g *broker.BookieAffinityGroup
	if err == nil {
		g, err = readBookieAffinity(r)
	}
	if err == nil {
		err = namespaceMissing(s.b.SetBookieAffinity(ns, g), noNamespace)
	}
	reply(w, nil, err)
}

func (s *Server) removeBookieAffinity(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	if err == nil {
		err = namespaceMissing(s.b.SetBookieAffinity(ns, nil), noNamespace)
	}
	reply(w, nil, err)
}

// readBookieAffinity reads a POST's group: none for an empty body or null;
// an object's two fields (numbers and booleans as their text, other keys
// ignored, as Jackson reads them); Jackson's refusal of anything else.
func readBookieAffinity(r *http.Request) (*broker.BookieAffinityGroup, error) {
	body, err := readBody(r, 1<<16)
	if err != nil {
		return nil, err
	}
	text := string(bytes.TrimSpace(body))
	switch {
	case text == "" || text == "null":
		return nil, nil
	case strings.HasPrefix(text, "["):
		return nil, &bodyError{msg: fmt.Sprintf("Cannot deserialize value of type `%s` from Array value (token `JsonToken.START_ARRAY`)",
			bookieAffinityClass) + location(body, strings.Index(string(body), "["))}
	case !strings.HasPrefix(text, "{") && json.Valid(body):
		return nil, &bodyError{msg: fmt.Sprintf("Cannot construct instance of `%s` (although at least one Creator exists): "+
			"no %s-argument constructor/factory method to deserialize from %s", bookieAffinityClass, jacksonKind(text),
			jacksonValueParen(text)) + location(body, strings.Index(string(body), text[:1]))}
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		var want bookieAffinityJSON
		return nil, badBody(body, json.Unmarshal(body, &want))
	}
	field := func(key string) (*string, error) {
		v, ok := raw[key]
		t := string(bytes.TrimSpace(v))
		switch {
		case !ok || t == "null":
			return nil, nil
		case strings.HasPrefix(t, `"`):
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, badBody(body, err)
			}
			return &s, nil
		case strings.HasPrefix(t, "{") || strings.HasPrefix(t, "["):
			m, _ := containerForScalar("java.lang.String", t)
			return nil, &bodyError{msg: m + location(body, strings.Index(string(body), t))}
		}
		return &t, nil
	}
	g := &broker.BookieAffinityGroup{}
	if g.Primary, err = field("bookkeeperAffinityGroupPrimary"); err != nil {
		return nil, err
	}
	if g.Secondary, err = field("bookkeeperAffinityGroupSecondary"); err != nil {
		return nil, err
	}
	return g, nil
}
