package admin

import (
	"net/http"
	"strconv"
	"time"
)

// The routes that move a subscription's cursor: skip, skip_all (clear
// backlog), resetcursor by time or message id, and expireMessages, for one
// subscription or all of them.

func (s *Server) routeCursors() {
	m := s.mux
	const sub = "/admin/v2/{domain}/{tenant}/{ns}/{topic}/subscription/{sub}"
	m.HandleFunc("POST "+sub+"/skip/{n}", s.inNamespace(s.skipMessages))
	m.HandleFunc("POST "+sub+"/skip_all", s.inNamespace(s.clearBacklog))
	m.HandleFunc("POST "+sub+"/resetcursor/{timestamp}", s.inNamespace(s.resetCursorToTime))
	m.HandleFunc("POST "+sub+"/resetcursor", s.inNamespace(s.resetCursorToMessage))
	m.HandleFunc("POST "+sub+"/expireMessages/{seconds}", s.inNamespace(s.expireMessages))
	m.HandleFunc("POST /admin/v2/{domain}/{tenant}/{ns}/{topic}/all_subscription/expireMessages/{seconds}",
		s.inNamespace(s.expireAllSubscriptions))
}

// pathInt parses the path value name; Jersey answers one it cannot convert
// with 404.
func pathInt(r *http.Request, name string) (int64, error) {
	v, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil {
		return 0, errStatus(http.StatusNotFound, "Not found: "+r.URL.Path)
	}
	return v, nil
}

func (s *Server) skipMessages(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var n int64
	if err == nil {
		n, err = pathInt(r, "n")
	}
	if err == nil {
		err = s.b.SkipMessages(topic, r.PathValue("sub"), n)
	}
	reply(w, nil, err)
}

func (s *Server) clearBacklog(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	if err == nil {
		err = s.b.ClearBacklog(topic, r.PathValue("sub"))
	}
	reply(w, nil, err)
}

func (s *Server) resetCursorToTime(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var ms int64
	if err == nil {
		ms, err = pathInt(r, "timestamp")
	}
	if err == nil {
		err = s.b.ResetCursorToTime(topic, r.PathValue("sub"), ms)
	}
	reply(w, nil, err)
}

// resetCursorToMessage resets to the message id of the body, as pulsar-admin
// sends it ({"ledgerId": L, "entryId": E, "excluded": B, ...}); excluded
// (or ?isExcluded=true) starts after it.
func (s *Server) resetCursorToMessage(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var body positionBody
	if err == nil {
		err = decodeJSON(r, &body)
	}
	id, ok := body.id()
	if err == nil && !ok {
		err = errStatus(http.StatusBadRequest, "Invalid message id")
	}
	if err == nil {
		excluded := body.Excluded || boolParam(r, "isExcluded")
		err = s.b.ResetCursorToMessage(topic, r.PathValue("sub"), id, excluded)
	}
	reply(w, nil, err)
}

func (s *Server) expireMessages(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var secs int64
	if err == nil {
		secs, err = pathInt(r, "seconds")
	}
	if err == nil {
		err = s.b.ExpireMessages(topic, r.PathValue("sub"), time.Duration(secs)*time.Second)
	}
	reply(w, nil, err)
}

// expireAllSubscriptions expires on each subscription of the topic; the
// first refusal is the answer, after all were tried.
func (s *Server) expireAllSubscriptions(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var secs int64
	var subs []string
	if err == nil {
		secs, err = pathInt(r, "seconds")
	}
	if err == nil {
		subs, err = s.b.Subscriptions(topic)
	}
	var first error
	for _, sub := range subs {
		if e := s.b.ExpireMessages(topic, sub, time.Duration(secs)*time.Second); e != nil && first == nil {
			first = e
		}
	}
	if err == nil {
		err = first
	}
	reply(w, nil, err)
}
