package broker

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/pulsarsim/pulsarsim/durable"
)

// With a data directory the cluster metadata (clustermeta.go) is kept as
// Pulsar's standalone keeps it in its metadata store: the clusters' data
// (/admin/clusters), their failure domains and namespace isolation
// policies, the resource quotas (/loadbalance/resource-quota), the dynamic
// configuration (/admin/configuration) and the clusters' policies. Its
// lock queues the whole of it as one record when it is released after a
// change, so a broker started on the directory again applies what was set.

// clusterMetaRecordName is the record the cluster metadata is kept under.
const clusterMetaRecordName = "cluster-metadata"

// clusterMetaRecord is the cluster metadata as the data directory keeps it.
type clusterMetaRecord struct {
	Clusters  map[string]ClusterData
	Domains   map[string]map[string]FailureDomain   `json:",omitempty"`
	Isolation map[string]map[string]IsolationPolicy `json:",omitempty"`
	Quota     ResourceQuota
	Quotas    map[string]ResourceQuota   `json:",omitempty"`
	Dynamic   map[string]string          `json:",omitempty"`
	Policies  map[string]ClusterPolicies `json:",omitempty"`
}

// encodeLocked encodes m. Equal metadata encode to equal bytes (JSON writes
// maps sorted by key). The caller holds m.mu.
func (m *clusterMeta) encodeLocked() ([]byte, error) {
	return json.Marshal(clusterMetaRecord{Clusters: m.clusters, Domains: m.domains, Isolation: m.isolation,
		Quota: m.quota, Quotas: m.quotas, Dynamic: m.dynamic, Policies: m.policies})
}

// decodeLocked replaces m's content with a record's. The caller holds m.mu.
func (m *clusterMeta) decodeLocked(v []byte) error {
	var r clusterMetaRecord
	if err := json.Unmarshal(v, &r); err != nil {
		return err
	}
	orEmpty(&r.Clusters)
	orEmpty(&r.Domains)
	orEmpty(&r.Isolation)
	orEmpty(&r.Quotas)
	orEmpty(&r.Dynamic)
	orEmpty(&r.Policies)
	m.clusters, m.domains, m.isolation = r.Clusters, r.Domains, r.Isolation
	m.quota, m.quotas, m.dynamic, m.policies = r.Quota, r.Quotas, r.Dynamic, r.Policies
	return nil
}

// orEmpty makes a nil map empty.
func orEmpty[M ~map[K]V, K comparable, V any](m *M) {
	if *m == nil {
		*m = M{}
	}
}

// keepClusterMeta loads the cluster metadata from d when it holds it (a
// new directory keeps what a new cluster starts with), and makes its lock
// queue it as it is released after a change.
func (s *shared) keepClusterMeta(d *durable.Disk) error {
	recs, err := d.Records(clusterMetaRecordName)
	if err != nil {
		return err
	}
	m := s.meta
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := recs[clusterMetaRecordName]; ok {
		if err := m.decodeLocked(v); err != nil {
			return fmt.Errorf("broker: the cluster metadata in the data directory: %w", err)
		}
	}
	var last []byte
	m.mu.save = func() {
		if v, err := m.encodeLocked(); err == nil && !bytes.Equal(v, last) {
			last = v
			d.PutRecord(clusterMetaRecordName, v)
		}
	}
	return nil
}
