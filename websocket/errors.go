package websocket

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"strings"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Pulsar's WebSocket endpoints are servlets of its web server (Jetty 9.4),
// which answers a refused request with its HTML error page; the status,
// title and message below are those Pulsar 4.0.8 sends.

// Servlet names as Jetty's error page shows them (Jetty adds the servlet
// holder's hash; this one is fixed).
const (
	producerServlet = "org.apache.pulsar.websocket.WebSocketProducerServlet-3d104c9b"
	consumerServlet = "org.apache.pulsar.websocket.WebSocketConsumerServlet-65da01f4"
	readerServlet   = "org.apache.pulsar.websocket.WebSocketReaderServlet-543fe698"
	jerseyServlet   = "org.glassfish.jersey.servlet.ServletContainer-3b4086c1"
)

// jettyEscape escapes text as Jetty's error page does.
var jettyEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;")

// httpError writes Jetty's error page for a refused request.
func httpError(w http.ResponseWriter, r *http.Request, servlet string, status int, message string) {
	if message == "" {
		message = http.StatusText(status)
	}
	m := jettyEscape.Replace(message)
	body := fmt.Sprintf("<html>\n<head>\n"+
		"<meta http-equiv=\"Content-Type\" content=\"text/html;charset=ISO-8859-1\"/>\n"+
		"<title>Error %d %s</title>\n</head>\n"+
		"<body><h2>HTTP ERROR %d %s</h2>\n<table>\n"+
		"<tr><th>URI:</th><td>%s</td></tr>\n"+
		"<tr><th>STATUS:</th><td>%d</td></tr>\n"+
		"<tr><th>MESSAGE:</th><td>%s</td></tr>\n"+
		"<tr><th>SERVLET:</th><td>%s</td></tr>\n"+
		"</table>\n<hr/><a href=\"https://jetty.org/\">Powered by Jetty:// 9.4.58.v20250814</a><hr/>\n\n"+
		"</body>\n</html>\n",
		status, m, status, m, html.EscapeString(r.URL.EscapedPath()), status, m, servlet)
	if reason, ok := jettyReasons[status]; ok {
		if hj, ok := w.(http.Hijacker); ok {
			if nc, rw, err := hj.Hijack(); err == nil {
				// Jetty's own reason phrase, which net/http cannot write.
				fmt.Fprintf(rw, "HTTP/1.1 %d %s\r\nCache-Control: must-revalidate,no-cache,no-store\r\n"+
					"Content-Type: text/html;charset=iso-8859-1\r\nContent-Length: %d\r\nConnection: close\r\n",
					status, reason, len(body))
				for k, vs := range w.Header() {
					for _, v := range vs {
						fmt.Fprintf(rw, "%s: %s\r\n", k, v)
					}
				}
				fmt.Fprintf(rw, "\r\n%s", body)
				_ = rw.Flush()
				_ = nc.Close()
				return
			}
		}
	}
	h := w.Header()
	h.Set("Cache-Control", "must-revalidate,no-cache,no-store")
	h.Set("Content-Type", "text/html;charset=iso-8859-1")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// jettyReasons are the reason phrases where Jetty's differ from
// net/http's.
var jettyReasons = map[int]string{http.StatusInternalServerError: "Server Error"}

// paramError is a query parameter or path Pulsar refuses with 400 "Invalid
// query params: ..." (an IllegalArgumentException in its handlers).
type paramError struct{ msg string }

func (e *paramError) Error() string { return e.msg }

func badParam(format string, args ...any) error { return &paramError{fmt.Sprintf(format, args...)} }

// numberError is Java's NumberFormatException message for s.
func numberError(s string) error { return badParam("For input string: \"%s\"", s) }

// clientStatus maps a failure of the internal client that carries no
// broker error to the status Pulsar's handlers give the Java client's
// exception for the same failure (AbstractWebSocketHandler.getErrorCode).
func clientStatus(err error) int {
	var pe *pulsar.Error
	if !errors.As(err, &pe) {
		return http.StatusInternalServerError
	}
	switch pe.Result() {
	case pulsar.TopicNotFound:
		return http.StatusNotFound
	case pulsar.ConsumerBusy, pulsar.ProducerFenced:
		return http.StatusConflict
	case pulsar.ProducerBlockedQuotaExceededError, pulsar.ProducerBlockedQuotaExceededException, pulsar.TopicTerminated:
		return http.StatusServiceUnavailable
	case pulsar.AuthenticationError:
		return http.StatusUnauthorized
	case pulsar.AuthorizationError:
		return http.StatusForbidden
	case pulsar.TimeoutError:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}
