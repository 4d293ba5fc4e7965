package admin

import "net/http"

// The services a Pulsar standalone started as pulsarsim is (functions
// worker off, package management off, transaction coordinator off unless
// asked for) answers with a refusal that says so, rather than 404: the
// functions, sources and sinks of the v3 API, packages, and the
// transaction routes pulsarsim does not serve (transactions.go serves the
// others).

const (
	functionsWorkerOff = "Pulsar Function Worker is not enabled, probably functionsWorkerEnabled is set to false"
	packagesOff        = "Package Management Service is not enabled in the broker."
)

func (s *Server) routeDisabledServices() {
	m := s.mux
	for _, p := range []string{"/admin/v3/functions/", "/admin/v3/source/", "/admin/v3/sink/"} {
		m.HandleFunc(p, func(w http.ResponseWriter, _ *http.Request) {
			httpError(w, http.StatusConflict, functionsWorkerOff)
		})
	}
	m.HandleFunc("/admin/v3/packages/", func(w http.ResponseWriter, _ *http.Request) {
		httpError(w, http.StatusServiceUnavailable, packagesOff)
	})
	// With the coordinator on, these routes are not served yet: 404, as
	// for any unknown path.
	m.HandleFunc("/admin/v3/transactions/", func(w http.ResponseWriter, r *http.Request) {
		if s.txnEnabled(w) {
			notFoundRoute(w, r)
		}
	})
}
