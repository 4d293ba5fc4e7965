package admin

import "net/http"

// A subscription's properties: GET and PUT
// /admin/v2/{domain}/{tenant}/{ns}/{topic}/subscription/{sub}/properties.
// A PUT replaces them all ({} removes them) and answers 204; a missing
// subscription is a 404 "Subscription {sub} not found for topic {topic}".

func (s *Server) subscriptionProperties(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var props map[string]string
	if err == nil {
		props, err = s.b.SubscriptionProperties(topic, r.PathValue("sub"))
	}
	reply(w, props, err)
}

func (s *Server) setSubscriptionProperties(w http.ResponseWriter, r *http.Request) {
	topic, err := topicFromPath(r)
	var props map[string]string
	if err == nil {
		err = decodeJSON(r, &props)
	}
	if err == nil {
		err = s.b.SetSubscriptionProperties(topic, r.PathValue("sub"), props)
	}
	reply(w, nil, err)
}
