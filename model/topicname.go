package model

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// TopicName is a parsed Pulsar topic name.
type TopicName struct {
	// Persistent is false for non-persistent:// topics.
	Persistent bool
	Tenant     string
	Namespace  string
	// Local is the name inside the namespace, partition suffix included.
	Local string
	// Partition is the N of a "-partition-N" suffix, or -1.
	Partition int
}

const PartitionSuffix = "-partition-"

var NamedEntity = regexp.MustCompile(`^[-=:.\w]+$`)

// ParseTopicName parses a short ("t", "tenant/ns/t") or full
// ("persistent://tenant/ns/t") topic name the way Pulsar does.
func ParseTopicName(s string) (TopicName, error) {
	if !strings.Contains(s, "://") {
		switch strings.Count(s, "/") {
		case 0:
			s = "persistent://public/default/" + s
		case 2:
			s = "persistent://" + s
		default:
			return TopicName{}, Errorf(ErrInvalidName, "Invalid short topic name '%s', it should be in the format of <tenant>/<namespace>/<topic> or <topic>", s)
		}
	}
	domain, rest, _ := strings.Cut(s, "://")
	var t TopicName
	switch domain {
	case "persistent":
		t.Persistent = true
	case "non-persistent":
	default:
		return TopicName{}, Errorf(ErrInvalidName, "Invalid topic domain: '%s'", domain)
	}
	if slices.Contains(strings.Split(rest, "/"), "") {
		return TopicName{}, Errorf(ErrInvalidName, "Invalid topic name: %s (a part of it between slashes is empty)", s)
	}
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) == 4 {
		return TopicName{}, Errorf(ErrInvalidName, "Invalid topic name: %s (pulsarsim does not serve v1 names with a cluster)", s)
	}
	if len(parts) != 3 || parts[2] == "" {
		return TopicName{}, Errorf(ErrInvalidName, "Invalid topic name: %s", s)
	}
	t.Tenant, t.Namespace, t.Local = parts[0], parts[1], parts[2]
	if !NamedEntity.MatchString(t.Tenant) || !NamedEntity.MatchString(t.Namespace) {
		return TopicName{}, Errorf(ErrInvalidName, "Invalid namespace format: %s/%s", t.Tenant, t.Namespace)
	}
	t.Partition = PartitionIndex(t.Local)
	return t, nil
}

// PartitionIndex returns N for a name ending in "-partition-N", else -1.
func PartitionIndex(local string) int {
	i := strings.LastIndex(local, PartitionSuffix)
	if i < 0 {
		return -1
	}
	num := local[i+len(PartitionSuffix):]
	if num == "" || (len(num) > 1 && num[0] == '0') || strings.ContainsAny(num, "+-") {
		return -1
	}
	n, err := strconv.Atoi(num)
	if err != nil {
		return -1
	}
	return n
}

// String returns the canonical name, "persistent://tenant/ns/local".
func (t TopicName) String() string {
	d := "non-persistent"
	if t.Persistent {
		d = "persistent"
	}
	return d + "://" + t.Tenant + "/" + t.Namespace + "/" + t.Local
}

// NamespaceName returns "tenant/ns".
func (t TopicName) NamespaceName() string { return t.Tenant + "/" + t.Namespace }

// Base returns the name of the partitioned topic this partition belongs to,
// or the name itself when it is not a partition.
func (t TopicName) Base() TopicName {
	if t.Partition < 0 {
		return t
	}
	b := t
	b.Local = t.Local[:strings.LastIndex(t.Local, PartitionSuffix)]
	b.Partition = -1
	return b
}

// PartitionName returns the name of partition i of this topic.
func (t TopicName) PartitionName(i int) TopicName {
	p := t.Base()
	p.Local = p.Local + PartitionSuffix + strconv.Itoa(i)
	p.Partition = i
	return p
}
