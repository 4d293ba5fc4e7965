package proxy

import (
	"bytes"
	"io"
	"net/http"
	"time"
)

// HTTPHandler returns the proxy's admin API: each request is sent to one of
// the brokers in turn, and the redirects a broker answers (to the owner of
// a topic, to the leader) are followed by the proxy itself, as Pulsar's
// AdminProxyHandler follows them, so the client sees the last answer.
func (p *Proxy) HTTPHandler() http.Handler {
	client := &http.Client{Timeout: 60 * time.Second}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		webs := p.webs()
		if len(webs) == 0 {
			http.Error(w, `{"reason":"No active broker is available"}`, http.StatusServiceUnavailable)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		base := webs[int(p.next.Add(1)-1)%len(webs)]
		req, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req.Header = r.Header.Clone()
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, `{"reason":"`+err.Error()+`"}`, http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	})
}
