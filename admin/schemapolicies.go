package admin

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// The schema policies' endpoints, with Pulsar 4.0.8's methods and answers:
//
//	namespace  schemaCompatibilityStrategy  GET, PUT (a name or ordinal; anything else is UNDEFINED)
//	namespace  schemaValidationEnforced     GET (?applied=true), POST
//	namespace  isAllowAutoUpdateSchema      GET, POST
//	topic      schemaCompatibilityStrategy  GET (?applied=true), PUT, DELETE
//	topic      schemaValidationEnforced     GET (?applied=true), POST
//
// A DELETE of a namespace's schema policy reaches Pulsar's bundle route,
// which refuses the policy's name as a bundle range.

func (s *Server) routeSchemaPolicies() {
	m := s.mux
	const ns = "/admin/v2/namespaces/{tenant}/{ns}/"
	const topic = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/"
	m.HandleFunc("GET "+ns+"schemaCompatibilityStrategy", s.getNamespaceSchemaStrategy)
	m.HandleFunc("PUT "+ns+"schemaCompatibilityStrategy", s.setNamespaceSchemaStrategy)
	m.HandleFunc("GET "+ns+"schemaValidationEnforced", s.getNamespaceSchemaBool(validationEnforced))
	m.HandleFunc("POST "+ns+"schemaValidationEnforced", s.setNamespaceSchemaBool(validationEnforced))
	m.HandleFunc("GET "+ns+"isAllowAutoUpdateSchema", s.getNamespaceSchemaBool(autoUpdate))
	m.HandleFunc("POST "+ns+"isAllowAutoUpdateSchema", s.setNamespaceSchemaBool(autoUpdate))
	for _, name := range []string{"schemaCompatibilityStrategy", "schemaValidationEnforced", "isAllowAutoUpdateSchema"} {
		m.HandleFunc("DELETE "+ns+name, func(w http.ResponseWriter, r *http.Request) {
			httpError(w, http.StatusPreconditionFailed, "Invalid bundle range: "+name)
		})
	}
	m.HandleFunc("GET "+topic+"schemaCompatibilityStrategy", s.getTopicSchemaStrategy)
	m.HandleFunc("PUT "+topic+"schemaCompatibilityStrategy", s.setTopicSchemaStrategy)
	m.HandleFunc("DELETE "+topic+"schemaCompatibilityStrategy", s.removeTopicSchemaStrategy)
	m.HandleFunc("GET "+topic+"schemaValidationEnforced", s.getTopicValidationEnforced)
	m.HandleFunc("POST "+topic+"schemaValidationEnforced", s.setTopicValidationEnforced)
	for _, p := range []string{"POST " + ns + "schemaCompatibilityStrategy", "PUT " + ns + "schemaValidationEnforced",
		"PUT " + ns + "isAllowAutoUpdateSchema", "POST " + topic + "schemaCompatibilityStrategy",
		"PUT " + topic + "schemaValidationEnforced", "DELETE " + topic + "schemaValidationEnforced"} {
		m.HandleFunc(p, methodNotAllowed)
	}
}

// methodNotAllowed answers a method a path does not serve, as Jersey does.
func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	httpError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
}

// readStrategy reads a schema compatibility strategy as Pulsar's JSON
// reader does: an enum name or ordinal; an empty body, null, an unknown
// name or an ordinal out of range is UNDEFINED (nil). As in Pulsar, the
// body is read before the namespace or topic is looked up.
func readStrategy(r *http.Request) (*broker.SchemaCompatibility, error) {
	body, err := readBody(r, 1<<16)
	if err != nil {
		return nil, err
	}
	text := strings.TrimSpace(string(body))
	if text == "" {
		return nil, nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, errStatus(http.StatusBadRequest, jsonSyntaxReason(text))
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		for _, c := range broker.SchemaCompatibilities {
			if string(c) == v {
				return &c, nil
			}
		}
		return nil, nil
	case float64:
		if i := int(v); float64(i) == v && i >= 1 && i <= len(broker.SchemaCompatibilities) {
			return &broker.SchemaCompatibilities[i-1], nil
		}
		return nil, nil
	}
	return nil, errStatus(http.StatusBadRequest, "Cannot deserialize value of type "+
		"`org.apache.pulsar.common.policies.data.SchemaCompatibilityStrategy` from "+jsonKind(v))
}

// readBool reads a boolean body as Pulsar's JSON reader reads a primitive
// boolean: true, false, their quoted forms, a number (0 is false) or null
// (false); an empty body is refused.
func readBool(r *http.Request) (bool, error) {
	body, err := readBody(r, 1<<16)
	if err != nil {
		return false, err
	}
	text := strings.TrimSpace(string(body))
	if text == "" {
		return false, errStatus(http.StatusBadRequest, "The request entity cannot be empty.")
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return false, errStatus(http.StatusBadRequest, jsonSyntaxReason(text))
	}
	switch v := v.(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case float64:
		return v != 0, nil
	case string:
		switch v {
		case "true", "True", "TRUE":
			return true, nil
		case "false", "False", "FALSE":
			return false, nil
		}
		return false, errStatus(http.StatusBadRequest, "Cannot deserialize value of type `boolean` from String \""+
			v+"\": only \"true\"/\"True\"/\"TRUE\" or \"false\"/\"False\"/\"FALSE\" recognized")
	}
	return false, errStatus(http.StatusBadRequest, "Cannot deserialize value of type `boolean` from "+jsonKind(v))
}

// jsonSyntaxReason words a body that is not JSON as Jackson words a bare
// word.
func jsonSyntaxReason(text string) string {
	word, _, _ := strings.Cut(text, " ")
	return "Unrecognized token '" + word + "': was expecting (JSON String, Number, Array, Object or token " +
		"'null', 'true' or 'false')"
}

// jsonKind names a JSON value's kind as Jackson's refusal does.
func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "Array value (token `JsonToken.START_ARRAY`)"
	case bool:
		return "Boolean value (token `JsonToken.VALUE_TRUE`)"
	}
	return "Object value (token `JsonToken.START_OBJECT`)"
}

// schemaBool is one of a namespace's boolean schema policies.
type schemaBool struct {
	field func(*broker.Policies) **bool
	// brokerWhenUnset: a GET of an unset (or, with onlyApplied, a false)
	// value answers the broker's value, with onlyApplied only for
	// ?applied=true; otherwise it answers false.
	brokerWhenUnset, onlyApplied bool
}

var (
	validationEnforced = schemaBool{field: func(p *broker.Policies) **bool { return &p.SchemaValidationEnforced },
		brokerWhenUnset: true, onlyApplied: true}
	autoUpdate = schemaBool{field: func(p *broker.Policies) **bool { return &p.AllowAutoUpdateSchema },
		brokerWhenUnset: true}
)

func (s *Server) getNamespaceSchemaBool(sb schemaBool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ns, err := namespaceFromPath(r)
		var pol broker.Policies
		if err == nil {
			pol, err = s.b.NamespacePolicies(ns)
		}
		if err != nil {
			reply(w, nil, err)
			return
		}
		v := *sb.field(&pol)
		if v == nil || (!*v && sb.onlyApplied) {
			def := s.b.BrokerPolicies()
			v = new(false)
			if sb.brokerWhenUnset && (!sb.onlyApplied || boolParam(r, "applied")) {
				v = *sb.field(&def)
			}
		}
		reply(w, *v, nil)
	}
}

func (s *Server) setNamespaceSchemaBool(sb schemaBool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// As in Pulsar, the body is read before the namespace is looked up.
		v, err := readBool(r)
		var ns string
		if err == nil {
			ns, err = namespaceFromPath(r)
		}
		if err == nil {
			err = s.b.UpdateNamespacePolicies(ns, func(p *broker.Policies) { *sb.field(p) = &v })
		}
		reply(w, nil, err)
	}
}

func (s *Server) getNamespaceSchemaStrategy(w http.ResponseWriter, r *http.Request) {
	ns, err := namespaceFromPath(r)
	var pol broker.Policies
	if err == nil {
		pol, err = s.b.NamespacePolicies(ns)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, strategyName(pol.SchemaCompatibilityStrategy), nil)
}

// strategyName is a strategy's name, UNDEFINED for none.
func strategyName(c *broker.SchemaCompatibility) string {
	if c == nil {
		return "UNDEFINED"
	}
	return string(*c)
}

func (s *Server) setNamespaceSchemaStrategy(w http.ResponseWriter, r *http.Request) {
	c, err := readStrategy(r)
	var ns string
	if err == nil {
		ns, err = namespaceFromPath(r)
	}
	if err == nil {
		err = s.b.UpdateNamespacePolicies(ns, func(p *broker.Policies) { p.SchemaCompatibilityStrategy = c })
	}
	reply(w, nil, err)
}

// topicPolicies returns the request's topic and its own or applied
// policies.
func (s *Server) topicPolicies(r *http.Request) (broker.Policies, error) {
	topic, err := topicFromPath(r)
	if err != nil {
		return broker.Policies{}, err
	}
	return s.policiesOf(topic, boolParam(r, "applied"))
}

// getTopicSchemaStrategy answers the topic's strategy: an empty body when
// the topic sets none, as Pulsar answers a null.
func (s *Server) getTopicSchemaStrategy(w http.ResponseWriter, r *http.Request) {
	pol, err := s.topicPolicies(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	if pol.SchemaCompatibilityStrategy == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	reply(w, *pol.SchemaCompatibilityStrategy, nil)
}

func (s *Server) setTopicSchemaStrategy(w http.ResponseWriter, r *http.Request) {
	c, err := readStrategy(r)
	var topic string
	if err == nil {
		topic, err = topicFromPath(r)
	}
	if err == nil {
		err = s.b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.SchemaCompatibilityStrategy = c })
	}
	reply(w, nil, err)
}

func (s *Server) removeTopicSchemaStrategy(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err == nil {
		err = s.b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.SchemaCompatibilityStrategy = nil })
	}
	reply(w, nil, err)
}

func (s *Server) getTopicValidationEnforced(w http.ResponseWriter, r *http.Request) {
	pol, err := s.topicPolicies(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, pol.SchemaValidationEnforced != nil && *pol.SchemaValidationEnforced, nil)
}

func (s *Server) setTopicValidationEnforced(w http.ResponseWriter, r *http.Request) {
	v, err := readBool(r)
	var topic string
	if err == nil {
		topic, err = topicFromPath(r)
	}
	if err == nil {
		err = s.b.UpdateTopicPolicies(topic, func(p *broker.Policies) { p.SchemaValidationEnforced = &v })
	}
	reply(w, nil, err)
}

// addSchemaPolicies writes the schema policies into a namespace's policies
// document, as Pulsar always writes them.
func (s *Server) addSchemaPolicies(doc map[string]any, pol broker.Policies) {
	def := s.b.BrokerPolicies()
	doc["schema_compatibility_strategy"] = strategyName(pol.SchemaCompatibilityStrategy)
	doc["schema_validation_enforced"] = pol.SchemaValidationEnforced != nil && *pol.SchemaValidationEnforced
	doc["is_allow_auto_update_schema"] = *pol.Or(def).AllowAutoUpdateSchema
}
