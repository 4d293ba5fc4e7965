package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// apiError is an error the admin API finds itself (a body that does not
// parse, a path that names nothing), with the HTTP status Pulsar answers it
// with.
type apiError struct {
	status int
	reason string
}

func (e *apiError) Error() string { return e.reason }

func errStatus(status int, reason string) error { return &apiError{status, reason} }

// statuses are the HTTP statuses Pulsar answers the broker's errors with.
var statuses = []struct {
	err    error
	status int
}{
	{broker.ErrTenantNotFound, http.StatusNotFound},
	{broker.ErrNamespaceNotFound, http.StatusNotFound},
	{broker.ErrTopicNotFound, http.StatusNotFound},
	{broker.ErrPartitionedTopicNotFound, http.StatusNotFound},
	{broker.ErrSubscriptionNotFound, http.StatusNotFound},
	{broker.ErrMessageNotFound, http.StatusNotFound},
	{broker.ErrSchemaNotFound, http.StatusNotFound},
	{broker.ErrTenantExists, http.StatusConflict},
	{broker.ErrNamespaceExists, http.StatusConflict},
	{broker.ErrTopicExists, http.StatusConflict},
	{broker.ErrSubscriptionExists, http.StatusConflict},
	{broker.ErrNotPartitioned, http.StatusConflict},
	{broker.ErrTenantNotEmpty, http.StatusConflict},
	{broker.ErrNamespaceNotEmpty, http.StatusConflict},
	{broker.ErrTopicBusy, http.StatusPreconditionFailed},
	{broker.ErrSubscriptionBusy, http.StatusPreconditionFailed},
	{broker.ErrExpiryNotIssued, http.StatusConflict},
	{broker.ErrTopicTerminated, http.StatusPreconditionFailed},
	{broker.ErrInvalidName, http.StatusPreconditionFailed},
	{broker.ErrInvalidPolicy, http.StatusPreconditionFailed},
	{broker.ErrInvalidPartitions, http.StatusNotAcceptable},
	{broker.ErrTooManyPartitions, http.StatusNotAcceptable},
	{broker.ErrFewerPartitions, http.StatusUnprocessableEntity},
	{broker.ErrInvalidMessage, http.StatusBadRequest},
	{broker.ErrIncompatibleSchema, http.StatusConflict},
	{broker.ErrInvalidSchemaData, http.StatusUnprocessableEntity},
	{broker.ErrSchemaCheckFailed, http.StatusInternalServerError},
	// Pulsar fails on an unknown schema type with an unexpected exception.
	{broker.ErrInvalidSchema, http.StatusInternalServerError},
}

// status returns the HTTP status of err: the admin API's own, the one Pulsar
// answers a broker error with, or 500 for anything else (a bug).
func status(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status
	}
	for _, s := range statuses {
		if errors.Is(err, s.err) {
			return s.status
		}
	}
	return http.StatusInternalServerError
}

// httpError writes Pulsar's error body.
func httpError(w http.ResponseWriter, status int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	writeJSON(w, map[string]string{"reason": reason})
}

// reply writes err as an error response, or v as JSON (nothing but 204 when
// v is nil).
func reply(w http.ResponseWriter, v any, err error) {
	var be *bodyError
	if errors.As(err, &be) {
		writeBodyError(w, be)
		return
	}
	if err != nil {
		httpError(w, status(err), err.Error())
		return
	}
	if v == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	writeJSON(w, v)
}

// writeJSON writes v as Pulsar's JSON writer does: no trailing newline, and
// no escaping of <, > and &. (Tools compare whole bodies: Testcontainers
// waits for ["standalone"] exactly, pulsaradmin reads a bare string.)
func writeJSON(w http.ResponseWriter, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	_, _ = w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// topicFromPath returns the full name of the topic named by the request's
// {domain}, {tenant}, {ns} and {topic} path values.
func topicFromPath(r *http.Request) (string, error) {
	domain := r.PathValue("domain")
	if domain == "" {
		domain = "persistent"
	}
	if domain != "persistent" && domain != "non-persistent" {
		return "", errStatus(http.StatusNotFound, "Not found: "+r.URL.Path)
	}
	tn, err := broker.ParseTopicName(domain + "://" + r.PathValue("tenant") + "/" + r.PathValue("ns") + "/" + r.PathValue("topic"))
	if err != nil {
		return "", err
	}
	return tn.String(), nil
}

// namespaceFromPath returns "tenant/ns" from the request's path values.
func namespaceFromPath(r *http.Request) (string, error) {
	ns := r.PathValue("tenant") + "/" + r.PathValue("ns")
	return ns, broker.ValidateNamespaceName(ns)
}

// readBody reads a request body of at most limit bytes.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit))
	if err != nil {
		return nil, errStatus(http.StatusBadRequest, err.Error())
	}
	return body, nil
}

// readInt reads a request body holding one JSON number (or a quoted one), or
// partitioned-topic metadata {"partitions": N, …}. Anything else is a 400,
// as Pulsar's JSON reader answers it.
func readInt(r *http.Request) (int, error) {
	body, err := readBody(r, 1<<16)
	if err != nil {
		return 0, err
	}
	var n flexInt
	if err := json.Unmarshal(body, &n); err != nil {
		return 0, badBody(body, err)
	}
	return int(n), nil
}

// decodeJSON reads a JSON request body into v; an empty body is no error
// and leaves v as it is. A body that does not parse as v is a 400.
func decodeJSON(r *http.Request, v any) error {
	body, err := readBody(r, 1<<20)
	if err != nil || len(strings.TrimSpace(string(body))) == 0 {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badBody(body, err)
	}
	return nil
}

// boolParam reads a boolean query parameter.
func boolParam(r *http.Request, name string) bool {
	v, _ := strconv.ParseBool(r.URL.Query().Get(name))
	return v
}
