package admin

import (
	"net/http"

	"github.com/pulsarsim/pulsarsim/broker"
)

// Topic compaction: the trigger and its status, and the compaction
// threshold policy (set with PUT at namespace level, as Pulsar does).

func (s *Server) routeCompaction() {
	const topic = "/admin/v2/{domain}/{tenant}/{ns}/{topic}"
	s.mux.HandleFunc("PUT "+topic+"/compaction", s.inNamespace(s.triggerCompaction))
	// Pulsar answers a status request in a namespace that does not exist
	// with "Topic … not found", so no namespace check first.
	s.mux.HandleFunc("GET "+topic+"/compaction", s.compactionStatus)
}

// triggerCompaction compacts the topic (every partition of a partitioned
// topic) and answers 204.
func (s *Server) triggerCompaction(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err == nil {
		err = s.b.Compact(topic)
	}
	reply(w, nil, err)
}

// compactionStatusJSON is Pulsar's LongRunningProcessStatus.
type compactionStatusJSON struct {
	Status    string `json:"status"`
	LastError string `json:"lastError"`
}

// compactionStatus answers the status of the topic's last compaction.
func (s *Server) compactionStatus(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var st broker.CompactionStatus
	if err == nil {
		st, err = s.b.CompactionStatus(topic)
	}
	if err != nil {
		reply(w, nil, err)
		return
	}
	reply(w, compactionStatusJSON{Status: st.Status, LastError: st.LastError}, nil)
}

var compactionThresholdEndpoint = policyEndpoint{
	nsPath: "compactionThreshold", topicPath: "compactionThreshold", jsonName: "compaction_threshold",
	nsMethod: "PUT",
	value: func(p broker.Policies) (any, bool) {
		if p.CompactionThreshold == nil {
			return nil, false
		}
		return *p.CompactionThreshold, true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		n, err := decodeIntBody(body)
		v := int64(n)
		return func(p *broker.Policies) { p.CompactionThreshold = &v }, err
	},
	check: func(own, _ broker.Policies, topicLevel bool) error {
		if v := own.CompactionThreshold; v != nil && *v < 0 {
			if topicLevel {
				return errStatus(http.StatusPreconditionFailed, "Invalid value for compactionThreshold")
			}
			return errStatus(http.StatusPreconditionFailed, "compactionThreshold must be 0 or more")
		}
		return nil
	},
	remove:     func(p *broker.Policies) { p.CompactionThreshold = nil },
	topicUnset: http.StatusOK, applied: true,
}
