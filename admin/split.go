package admin

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// splitBundle splits a namespace bundle at its owner, as Pulsar 4.0.8's
// Namespaces.splitNamespaceBundle: the body (the split boundaries) is read
// first, then the algorithm is checked, the namespace and the bundle looked
// for (LARGEST names the one of the most topics), and the bundle's owner
// found (assigned first when nobody owns it,
// as a lookup would): another broker answers 307 there, with the
// authoritative flag of the broker redirecting being the leader. The owner
// splits and answers 204, also when the algorithm found nowhere to split
// (with the modular load manager; the extensible one answers 500).
func (s *Server) splitBundle(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	unload, _ := strconv.ParseBool(q.Get("unload"))
	opts := broker.SplitOptions{Algorithm: q.Get("splitAlgorithmName"), Unload: unload}
	positions, err := readPositions(r)
	if err != nil {
		reply(w, nil, err)
		return
	}
	opts.Boundaries = positions
	ns, err := namespaceFromPath(r)
	if err == nil {
		err = broker.CheckSplitOptions(opts)
	}
	if err == nil && !s.b.NamespaceExists(ns) {
		err = errStatus(http.StatusNotFound, "Namespace not found")
	}
	var bd broker.Bundle
	switch name := r.PathValue("bundle"); {
	case err != nil:
	case name == "LARGEST":
		var ok bool
		if bd, ok = s.b.LargestBundle(ns); !ok {
			err = errStatus(http.StatusNotFound, "Bundle range LARGEST not found")
		}
	case name == "HOT":
		// The bundle of the highest throughput, by the load manager's
		// data, which pulsarsim has none of: as Pulsar without it.
		err = errStatus(http.StatusNotFound, "Bundle range HOT not found")
	default:
		bd, err = broker.ParseBundleRange(ns, name)
	}
	if err == nil {
		err = s.b.CheckBundle(bd)
	}
	if err != nil {
		reply(w, nil, splitError(err))
		return
	}
	res, err := s.b.LookupBundle(bd, boolParam(r, "authoritative"))
	if err != nil {
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if !res.Self {
		s.redirectBundle(w, r, res.Broker)
		return
	}
	_, err = s.b.SplitBundle(bd, opts)
	if errors.Is(err, broker.ErrNotOwner) {
		if owner, ok := s.b.BundleOwner(bd); ok {
			s.redirectBundle(w, r, owner)
			return
		}
	}
	reply(w, nil, splitError(err))
}

// redirectBundle answers 307 to the same request at broker to, with
// authoritative set as Pulsar's validateBundleOwnership sets it
// (redirectsAuthoritatively).
func (s *Server) redirectBundle(w http.ResponseWriter, r *http.Request, to broker.BrokerInfo) {
	q := r.URL.Query()
	q.Set("authoritative", strconv.FormatBool(s.redirectsAuthoritatively()))
	http.Redirect(w, r, to.WebURL+r.URL.Path+"?"+q.Encode(), http.StatusTemporaryRedirect)
}

// redirectsAuthoritatively is the authoritative flag of this broker's
// redirects of a bundle's admin calls, Pulsar's isLeaderBroker: whether it
// leads, always with the extensible load manager.
func (s *Server) redirectsAuthoritatively() bool {
	return s.b.LoadManager() == broker.ExtensibleLoadManager || s.b.Leader().Self
}

// splitError gives a split's refusal Pulsar's status and words.
func splitError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, broker.ErrInvalidSplit):
		return errStatus(http.StatusPreconditionFailed, err.Error())
	case errors.Is(err, broker.ErrSplitFailed):
		return errStatus(http.StatusPreconditionFailed, broker.ErrSplitFailed.Error())
	case errors.Is(err, broker.ErrSplitNowhere):
		return unexpected(err.Error(), "java.lang.IllegalStateException: "+err.Error())
	case errors.Is(err, broker.ErrSplitAlgorithmFailed):
		msg := broker.ErrSplitAlgorithmFailed.Error()
		return unexpected(msg, "java.lang.ClassCastException: "+msg)
	}
	return err
}

// readPositions reads a split's body, the boundaries as a JSON array of
// numbers (a number in a string counts, a fraction is cut, as Pulsar's JSON
// reader reads a List<Long>); none, or null, is no boundary. Anything else
// is a 400 in the reader's words.
func readPositions(r *http.Request) ([]int64, error) {
	body, err := readBody(r, 1<<20)
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
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, errStatus(http.StatusBadRequest, "Cannot deserialize value of type `java.util.ArrayList<java.lang.Long>` from "+jsonKind(v))
	}
	out := make([]int64, 0, len(list))
	for _, e := range list {
		switch e := e.(type) {
		case float64:
			out = append(out, int64(math.Trunc(e)))
		case string:
			n, err := strconv.ParseInt(strings.TrimSpace(e), 10, 64)
			if err != nil {
				return nil, errStatus(http.StatusBadRequest, "Cannot deserialize value of type `java.lang.Long` from String \""+
					e+"\": not a valid `java.lang.Long` value")
			}
			out = append(out, n)
		case nil:
		default:
			return nil, errStatus(http.StatusBadRequest, "Cannot deserialize value of type `java.lang.Long` from "+jsonKind(e))
		}
	}
	return out, nil
}

// creationBundles reads the bundles a namespace's creation body names, its
// policies' `bundles`: numBundles equal ranges, or the ranges between the
// boundaries given (hex strings, sorted and taken once each, which must
// cover the whole hash range: 400 otherwise, in Pulsar's words). None, or
// a count below 1, is def, the broker's default.
func creationBundles(body namespaceCreation, def int) (n int, boundaries []uint32, err error) {
	raw, ok := body.policies["bundles"]
	if !ok || string(raw) == "null" {
		return def, nil, nil
	}
	var data struct {
		Boundaries []string `json:"boundaries"`
		NumBundles int      `json:"numBundles"`
	}
	if err := json.Unmarshal(raw, &data); err != nil {
		return 0, nil, errStatus(http.StatusBadRequest, "Invalid JSON body: "+err.Error())
	}
	if data.NumBundles <= 0 {
		return def, nil, nil
	}
	if len(data.Boundaries) == 0 {
		return data.NumBundles, nil, nil
	}
	seen := map[int64]string{}
	var points []int64
	for _, b := range data.Boundaries {
		v, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimPrefix(b, "0x"), "0X"), 16, 64)
		if err != nil || v < 0 || v > math.MaxUint32 {
			return 0, nil, errStatus(http.StatusBadRequest, "For input string: \""+b+"\"")
		}
		if _, dup := seen[v]; !dup {
			seen[v] = b
			points = append(points, v)
		}
	}
	slices.Sort(points)
	if points[0] != 0 || points[len(points)-1] != math.MaxUint32 || len(points) < 2 {
		return 0, nil, errStatus(http.StatusBadRequest, "Input bundles do not cover the whole hash range. first:"+
			seen[points[0]]+", last:"+seen[points[len(points)-1]])
	}
	for _, p := range points {
		boundaries = append(boundaries, uint32(p))
	}
	return len(boundaries) - 1, boundaries, nil
}
