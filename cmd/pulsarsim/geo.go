package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// parseClusters reads -clusters: cluster names, comma-separated, each once.
func parseClusters(v string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			return nil, fmt.Errorf("-clusters %q: an empty cluster name", v)
		case slices.Contains(names, n):
			return nil, fmt.Errorf("-clusters %q: %s twice", v, n)
		}
		names = append(names, n)
	}
	return names, nil
}

// serveClusters runs one cluster of spec.n brokers (at least one) per name
// over one configuration store until ctx is done: the k-th cluster's i-th
// broker serves on spec's ports + k*n + i. Each cluster's metadata is
// written with its URLs, and the public tenant may use every cluster; a
// namespace is replicated once its replication clusters name several.
func serveClusters(ctx context.Context, names []string, spec clusterSpec) error {
	if spec.proxyAddr != "" {
		return errors.New("-proxy-addr: a proxy stands in front of one cluster, not of -clusters")
	}
	cs := broker.NewConfigStore()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := max(spec.n, 1)
	done := make(chan error, len(names))
	for k, name := range names {
		s := spec
		s.n = n
		var err error
		for _, a := range []*string{&s.addr, &s.httpAddr, &s.tlsAddr, &s.httpsAddr} {
			if *a != "" && err == nil {
				*a, err = shiftPort(*a, k*n)
			}
		}
		if err != nil {
			cancel()
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		s.opts = append(slices.Clone(spec.opts), broker.WithClusterName(name), broker.WithConfigStore(cs))
		s.onServing = func(c *broker.Cluster) {
			b := c.Broker(0)
			fields := map[string]any{"brokerServiceUrl": c.URL()}
			if u := b.WebServiceURL(); u != "" {
				fields["serviceUrl"] = u
			}
			if u := c.TLSURL(); u != "" {
				fields["brokerServiceUrlTls"] = u
			}
			if err := b.UpdateCluster(name, broker.ClusterData{Fields: fields}); err != nil {
				spec.logger.Error("pulsarsim cluster metadata", "cluster", name, "err", err)
			}
			if err := b.SetTenantAllowedClusters("public", names); err != nil {
				spec.logger.Error("pulsarsim allowed clusters of public", "err", err)
			}
			spec.logger.Info("pulsarsim geo cluster serving", "cluster", name, "url", c.URL(), "admin", b.WebServiceURL())
		}
		go func() {
			err := serveCluster(ctx, s)
			if err != nil {
				err = fmt.Errorf("cluster %s: %w", name, err)
			}
			done <- err
			cancel() // one cluster failing stops the others
		}()
	}
	var errs []error
	for range names {
		errs = append(errs, <-done)
	}
	return errors.Join(errs...)
}
