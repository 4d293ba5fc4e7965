package admin

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Handlers for schemas and lookups.

// schemaJSON is Pulsar's GetSchemaResponse.
type schemaJSON struct {
	Version    int64             `json:"version"`
	Type       string            `json:"type"`
	Timestamp  int64             `json:"timestamp"`
	Data       string            `json:"data"`
	Properties map[string]string `json:"properties"`
}

func schemaResponse(s broker.Schema) schemaJSON {
	data := string(s.Data)
	if s.Type == "KEY_VALUE" {
		data = keyValueDataJSON(s)
	}
	return schemaJSON{Version: s.Version, Type: s.Type, Timestamp: s.Registered.UnixMilli(),
		Data: data, Properties: s.Properties}
}

// getSchema answers the newest schema of a topic, or the version the path
// names.
func (s *Server) getSchema(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	version := int64(-1)
	if v := r.PathValue("version"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			reply(w, nil, broker.ErrSchemaNotFound)
			return
		}
		version = n
	}
	sc, err := s.b.Schema(topic, version)
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, schemaResponse(sc), nil)
}

// getSchemas answers every version of a topic's schema.
func (s *Server) getSchemas(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var list []broker.Schema
	if err == nil {
		list, err = s.b.Schemas(topic)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	out := make([]schemaJSON, len(list))
	for i, sc := range list {
		out[i] = schemaResponse(sc)
	}
	reply(w, map[string]any{"getSchemaResponses": out}, nil)
}

// schemaPayload is Pulsar's PostSchemaPayload.
type schemaPayload struct {
	Type       *string           `json:"type"`
	Schema     string            `json:"schema"`
	Properties map[string]string `json:"properties"`
}

// readSchemaPayload reads the topic and the schema of a request.
func readSchemaPayload(r *http.Request) (string, broker.Schema, error) {
	topic, err := topicFromPath(r)
	var body schemaPayload
	if err == nil {
		err = decodeJSON(r, &body)
	}
	sc := broker.Schema{Data: []byte(body.Schema), Properties: body.Properties}
	if body.Type != nil {
		sc.Type = *body.Type
	}
	if err == nil && sc.Type == "KEY_VALUE" {
		sc.Data, err = keyValueDataBinary(sc.Data)
	}
	return topic, sc, err
}

// postSchema registers a schema given as Pulsar's PostSchemaPayload and
// answers its version.
func (s *Server) postSchema(w http.ResponseWriter, r *http.Request) {
	topic, sc, err := readSchemaPayload(r)
	var v int64
	if err == nil {
		v, err = s.b.PutSchema(topic, sc)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, map[string]any{"version": map[string]int64{"version": v}}, nil)
}

// schemaCompatibility answers whether a schema could be registered, as
// Pulsar's IsCompatibilityResponse (202). Pulsar answers an incompatible
// or malformed schema with an unexpected-error 500 and the reason.
func (s *Server) schemaCompatibility(w http.ResponseWriter, r *http.Request) {
	topic, sc, err := readSchemaPayload(r)
	var strategy broker.SchemaCompatibility
	if err == nil {
		strategy, err = s.b.CheckSchemaCompatibility(topic, sc)
	}
	if errors.Is(err, broker.ErrIncompatibleSchema) || errors.Is(err, broker.ErrInvalidSchemaData) ||
		errors.Is(err, broker.ErrSchemaCheckFailed) {
		err = errStatus(http.StatusInternalServerError, err.Error())
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	writeJSON(w, map[string]any{"compatibility": true, "schemaCompatibilityStrategy": strategy})
}

// schemaVersion answers the version of the topic's schema that is the
// same as the one given, -1 for none.
func (s *Server) schemaVersion(w http.ResponseWriter, r *http.Request) {
	topic, sc, err := readSchemaPayload(r)
	var v int64
	if err == nil {
		v, err = s.b.SchemaVersionOf(topic, sc)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, map[string]int64{"version": v}, nil)
}

// deleteSchema deletes a topic's schema (?force=true forgets every
// version) and answers the version the deletion took.
func (s *Server) deleteSchema(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var v int64
	if err == nil {
		v, err = s.b.DeleteSchema(topic, boolParam(r, "force"))
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, map[string]int64{"version": v}, nil)
}

// lookup answers an HTTP lookup: this broker serves every topic.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	if s.lookupAnswer(w, r, topic) {
		return
	}
	url, tlsURL, _ := s.b.LookupURLs("")
	// The web service's URL under the advertised address, of the scheme
	// the request came by.
	web, webTLS := s.webURLs(r)
	if r.TLS != nil {
		web = ""
		if webTLS == "" {
			webTLS = "https://" + r.Host
		}
	} else {
		webTLS = ""
		if web == "" {
			web = "http://" + r.Host
		}
	}
	reply(w, lookupData(url, tlsURL, web, webTLS), nil)
}

// lookupData is Pulsar's LookupData as its JSON writes it: the URLs that are
// set (an unset one is left out), nativeUrl the broker's URL again, and
// brokerUrlSsl always "" (kept for old C++ clients).
func lookupData(url, tlsURL, web, webTLS string) map[string]string {
	out := map[string]string{"brokerUrl": url, "nativeUrl": url, "brokerUrlSsl": ""}
	for k, v := range map[string]string{"brokerUrlTls": tlsURL, "httpUrl": web, "httpUrlTls": webTLS} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// bundle answers the range of the namespace bundle holding a topic, bare,
// as Pulsar writes it ("0x40000000_0x80000000").
func (s *Server) bundle(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	bd, err := s.b.BundleOf(topic)
	if err != nil {
		reply(w, nil, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte(bd.Range()))
}
