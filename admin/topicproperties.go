package admin

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// A topic's properties (broker/topicproperties.go): GET, PUT (added to
// those it has) and DELETE ?key= of .../{topic}/properties, and the
// properties a topic is created with (PUT of the topic with a JSON object,
// PUT of .../partitions with a partitioned-topic-metadata body), answered as
// Pulsar 4.0.8 answers them.

// partitionedTopicMetadataType is the media type of a PUT .../partitions
// whose body is Pulsar's PartitionedTopicMetadata (partitions and
// properties) rather than a bare count; pulsar-admin and pulsaradmin send it.
const partitionedTopicMetadataType = "application/vnd.partitioned-topic-metadata+json"

func (s *Server) routeTopicProperties() {
	const topic = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/properties"
	s.mux.HandleFunc("GET "+topic, s.persistentOwned(s.topicProperties))
	s.mux.HandleFunc("PUT "+topic, s.persistentOwned(s.updateTopicProperties))
	s.mux.HandleFunc("DELETE "+topic, s.persistentOwned(s.removeTopicProperty))
}

// persistentOwned refuses a non-persistent topic's name with Pulsar's 406,
// then sends the request to the topic's owner when another broker owns it.
func (s *Server) persistentOwned(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("domain") == "non-persistent" {
			httpError(w, http.StatusNotAcceptable, "Need to provide a persistent topic name")
			return
		}
		if s.redirectToOwner(w, r) {
			return
		}
		h(w, r)
	}
}

// topicProperties answers a topic's properties; a partitioned topic
// created without any answers an empty 200, as Pulsar's null does.
func (s *Server) topicProperties(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var props map[string]string
	if err == nil {
		props, err = s.b.TopicProperties(topic)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	if props == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		return
	}
	reply(w, props, nil)
}

func (s *Server) updateTopicProperties(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var props map[string]string
	if err == nil {
		props, err = readProperties(r)
	}
	if err == nil {
		err = s.b.UpdateTopicProperties(topic, props)
	}
	reply(w, nil, err)
}

func (s *Server) removeTopicProperty(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err == nil {
		err = s.b.RemoveTopicProperty(topic, r.URL.Query().Get("key"))
	}
	reply(w, nil, err)
}

// readProperties reads a JSON object of properties, as Jackson reads a
// Map<String, String>: numbers and booleans become their text, an empty
// body or null no properties; a null value is the NullPointerException
// Pulsar's managed ledger meets (a 500), anything else a 400.
func readProperties(r *http.Request) (map[string]string, error) {
	body, err := readBody(r, 1<<20)
	if err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		var want map[string]string
		return nil, badBody(body, json.Unmarshal(body, &want))
	}
	props := make(map[string]string, len(raw))
	for k, v := range raw {
		text := string(bytes.TrimSpace(v))
		switch {
		case text == "null":
			return nil, errStatus(http.StatusInternalServerError, "java.lang.NullPointerException")
		case strings.HasPrefix(text, `"`):
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, badBody(body, err)
			}
			props[k] = s
		case strings.HasPrefix(text, "{") || strings.HasPrefix(text, "["):
			var want map[string]string
			return nil, badBody(body, json.Unmarshal(body, &want))
		default:
			props[k] = text // a number or a boolean, as written
		}
	}
	return props, nil
}

// createTopicWithBody creates a non-partitioned topic with the properties
// its body holds.
func (s *Server) createTopicWithBody(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var props map[string]string
	if err == nil {
		props, err = readProperties(r)
	}
	if err == nil {
		err = s.b.CreateTopicWithProperties(topic, props)
	}
	reply(w, nil, err)
}

// readPartitionedMetadata reads the body of a PUT .../partitions: a bare
// count, or, with the partitioned-topic-metadata media type, Pulsar's
// PartitionedTopicMetadata object (or a bare count all the same).
func readPartitionedMetadata(r *http.Request) (int, map[string]string, error) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), partitionedTopicMetadataType) {
		n, err := readInt(r)
		return n, nil, err
	}
	body, err := readBody(r, 1<<20)
	if err != nil {
		return 0, nil, err
	}
	var meta struct {
		Partitions int               `json:"partitions"`
		Properties map[string]string `json:"properties"`
	}
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		if err := json.Unmarshal(body, &meta); err != nil {
			return 0, nil, badBody(body, err)
		}
		return meta.Partitions, meta.Properties, nil
	}
	var n flexInt
	if err := json.Unmarshal(body, &n); err != nil {
		return 0, nil, badBody(body, err)
	}
	return int(n), nil, nil
}

// partitionedMetadataOf is what GET .../partitions answers: the count, the
// deletion flag (never set once it answers) and the properties when the
// partitioned topic has some.
func (s *Server) partitionedMetadataOf(topic string, n int) any {
	type metadata struct {
		Partitions int  `json:"partitions"`
		Deleted    bool `json:"deleted"`
		// Absent when the topic has none, {} when it has an empty set.
		Properties *map[string]string `json:"properties,omitempty"`
	}
	md := metadata{Partitions: n}
	if n > 0 {
		if tn, err := broker.ParseTopicName(topic); err == nil && tn.Partition < 0 {
			if props, err := s.b.TopicProperties(topic); err == nil && props != nil {
				md.Properties = &props
			}
		}
	}
	return md
}
