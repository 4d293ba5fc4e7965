package admin

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
	"github.com/pulsarsim/pulsarsim/model"
)

// The policies a standalone stores and serves but does not apply (offload,
// persistence, subscribe rate, the deprecated auto-update strategy,
// encryptionRequired), and the inactive-topic and subscription-auth
// policies, as entries of policyEndpoints (routed with the others by
// routePolicies). Their answers are Pulsar 4.0.8's.

func init() {
	policyEndpoints = append(policyEndpoints,
		offloadThresholdEndpoint("offloadThreshold", func(o *model.OffloadPolicies) **int64 { return &o.ThresholdBytes }, 0),
		offloadThresholdEndpoint("offloadThresholdInSeconds", func(o *model.OffloadPolicies) **int64 { return &o.ThresholdSeconds }, http.StatusOK),
		offloadDeletionLagEndpoint,
		offloadPoliciesEndpoint,
		persistenceEndpoint,
		subscribeRateEndpoint,
		schemaAutoUpdateEndpoint,
		encryptionRequiredEndpoint,
		subscriptionAuthModeEndpoint,
		inactiveTopicPoliciesEndpoint,
	)
}

// offloadField is one offload setting a namespace sets on its own
// (offloadThreshold, offloadThresholdInSeconds, offloadDeletionLagMs):
// Pulsar keeps it in the namespace's offload policies, made with their
// defaults if there are none.
func offloadField(field func(*model.OffloadPolicies) **int64) policyEndpoint {
	return policyEndpoint{
		value: func(p broker.Policies) (any, bool) {
			if p.Offload == nil || *field(p.Offload) == nil {
				return nil, false
			}
			return **field(p.Offload), true
		},
		decode: func(body []byte) (func(*broker.Policies), error) {
			var n flexInt
			err := decodeBody(body, &n)
			v := int64(n)
			return func(p *broker.Policies) {
				o := model.OffloadPolicies{}
				if p.Offload != nil {
					o = *p.Offload
				}
				*field(&o) = &v
				p.Offload = &o
			}, err
		},
		remove: func(p *broker.Policies) {
			if p.Offload != nil {
				o := *p.Offload
				*field(&o) = nil
				p.Offload = &o
			}
		},
		nsMethod: "PUT",
	}
}

// offloadThresholdEndpoint serves a threshold, which reads -1 when unset
// and which Pulsar does not remove (DELETE names a bundle there).
func offloadThresholdEndpoint(path string, field func(*model.OffloadPolicies) **int64, setStatus int) policyEndpoint {
	e := offloadField(field)
	e.nsPath, e.nsSetStatus, e.nsNoDelete = path, setStatus, true
	e.unset = func() any { return -1 }
	return e
}

var offloadDeletionLagEndpoint = func() policyEndpoint {
	e := offloadField(func(o *model.OffloadPolicies) **int64 { return &o.DeletionLagMillis })
	e.nsPath = "offloadDeletionLagMs"
	return e
}()

var offloadPoliciesEndpoint = policyEndpoint{
	nsPath: "offloadPolicies", topicPath: "offloadPolicies", jsonName: "offload_policies",
	value: func(p broker.Policies) (any, bool) {
		if p.Offload == nil {
			return nil, false
		}
		return offloadPoliciesOut(*p.Offload), true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		if body == nil {
			return nil, late(errStatus(http.StatusPreconditionFailed, "The offloadPolicies must be specified for namespace offload."))
		}
		o, err := decodeOffloadPolicies(body)
		if err != nil {
			return nil, err
		}
		return func(p *broker.Policies) { p.Offload = &o }, nil
	},
	check: func(own, _ broker.Policies, _ bool) error {
		if own.Offload != nil {
			if err := own.Offload.Validate(); err != nil {
				return errStatus(http.StatusPreconditionFailed, err.Error())
			}
		}
		return nil
	},
	remove:  func(p *broker.Policies) { p.Offload = nil },
	nsEmpty: emptyDecoded, topicEmpty: emptyDecoded,
	topicUnset: http.StatusOK, applied: true,
}

var persistenceEndpoint = policyEndpoint{
	nsPath: "persistence", topicPath: "persistence", jsonName: "persistence",
	value: func(p broker.Policies) (any, bool) {
		if p.Persistence == nil {
			return nil, false
		}
		return persistenceOut(*p.Persistence), true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		if body == nil {
			return nil, late(errStatus(http.StatusBadRequest, "persistence policies should not be null"))
		}
		j := persistenceJSON{Ensemble: 2, WriteQuorum: 2, AckQuorum: 2}
		if err := decodeBody(body, &j); err != nil {
			return nil, err
		}
		v := model.Persistence{Ensemble: int(j.Ensemble), WriteQuorum: int(j.WriteQuorum), AckQuorum: int(j.AckQuorum),
			MaxMarkDeleteRate: float64(j.MaxMarkDeleteRate)}
		return func(p *broker.Policies) { p.Persistence = &v }, nil
	},
	check: func(own, _ broker.Policies, _ bool) error {
		if own.Persistence != nil {
			if err := own.Persistence.Validate(); err != nil {
				return errStatus(http.StatusBadRequest, err.Error())
			}
		}
		return nil
	},
	remove:  func(p *broker.Policies) { p.Persistence = nil },
	nsEmpty: emptyDecoded, topicEmpty: emptyDecoded,
	topicUnset: http.StatusOK, applied: true,
}

var subscribeRateEndpoint = policyEndpoint{
	nsPath: "subscribeRate", topicPath: "subscribeRate",
	value: func(p broker.Policies) (any, bool) {
		if p.SubscribeRate == nil {
			return nil, false
		}
		return subscribeRateJSON{flexInt(p.SubscribeRate.PerConsumer), flexInt(p.SubscribeRate.PeriodSeconds)}, true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		j := subscribeRateJSON{-1, 30}
		err := decodeBody(body, &j)
		v := model.SubscribeRate{PerConsumer: int(j.PerConsumer), PeriodSeconds: int(j.PeriodSeconds)}
		return func(p *broker.Policies) { p.SubscribeRate = &v }, err
	},
	remove:  func(p *broker.Policies) { p.SubscribeRate = nil },
	nsEmpty: emptyRemoves, topicEmpty: emptyIgnored,
	topicUnset: http.StatusOK, applied: true,
}

// readEnum reads a JSON enum as Jackson does with unknown values read as
// null: a name, or an ordinal into names; anything else is "" (unset).
func readEnum[T ~string](body []byte, names []T) (T, error) {
	var v any
	if err := decodeBody(body, &v); err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		for _, n := range names {
			if string(n) == x {
				return n, nil
			}
		}
	case float64:
		if i := int(x); float64(i) == x && i >= 0 && i < len(names) {
			return names[i], nil
		}
	}
	return "", nil
}

var schemaAutoUpdateEndpoint = policyEndpoint{
	nsPath: "schemaAutoUpdateCompatibilityStrategy", jsonName: "schema_auto_update_compatibility_strategy",
	value: func(p broker.Policies) (any, bool) {
		if p.SchemaAutoUpdateCompatibility == nil {
			return nil, false
		}
		return *p.SchemaAutoUpdateCompatibility, true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		v, err := readEnum(body, model.SchemaAutoUpdateCompatibilities)
		return func(p *broker.Policies) {
			p.SchemaAutoUpdateCompatibility = nil
			if v != "" {
				p.SchemaAutoUpdateCompatibility = &v
			}
		}, err
	},
	remove:   func(p *broker.Policies) { p.SchemaAutoUpdateCompatibility = nil },
	nsEmpty:  emptyRemoves,
	nsMethod: "PUT", nsNoDelete: true,
	nsUnset: http.StatusNoContent,
}

var encryptionRequiredEndpoint = policyEndpoint{
	nsPath: "encryptionRequired", jsonName: "encryption_required",
	value: func(p broker.Policies) (any, bool) {
		if p.EncryptionRequired == nil {
			return false, true
		}
		return *p.EncryptionRequired, true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		on, err := decodeBoolBody(body)
		return func(p *broker.Policies) { p.EncryptionRequired = &on }, err
	},
	remove:     func(p *broker.Policies) { p.EncryptionRequired = nil },
	nsNoDelete: true,
}

var subscriptionAuthModeEndpoint = policyEndpoint{
	nsPath: "subscriptionAuthMode", jsonName: "subscription_auth_mode",
	value: func(p broker.Policies) (any, bool) {
		if p.SubscriptionAuthMode == nil {
			return model.SubscriptionAuthNone, true
		}
		return *p.SubscriptionAuthMode, true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		v, err := readEnum(body, []model.SubscriptionAuthMode{model.SubscriptionAuthNone, model.SubscriptionAuthPrefix})
		return func(p *broker.Policies) {
			p.SubscriptionAuthMode = nil
			if v != "" {
				p.SubscriptionAuthMode = &v
			}
		}, err
	},
	remove:     func(p *broker.Policies) { p.SubscriptionAuthMode = nil },
	nsEmpty:    emptyRemoves,
	nsNoDelete: true,
}

var inactiveTopicPoliciesEndpoint = policyEndpoint{
	nsPath: "inactiveTopicPolicies", topicPath: "inactiveTopicPolicies", jsonName: "inactive_topic_policies",
	value: func(p broker.Policies) (any, bool) {
		if p.InactiveTopics == nil {
			return nil, false
		}
		it := *p.InactiveTopics
		return inactiveTopicPoliciesJSON{Mode: string(it.Mode), MaxInactiveSeconds: flexInt(it.MaxInactiveDurationSeconds),
			DeleteWhileInactive: it.DeleteWhileInactive}, true
	},
	decode: func(body []byte) (func(*broker.Policies), error) {
		var j inactiveTopicPoliciesJSON
		err := decodeBody(body, &j)
		mode := model.InactiveTopicDeleteMode(j.Mode)
		if !mode.Valid() {
			mode = "" // Jackson reads an unknown mode as null
		}
		v := model.InactiveTopicPolicies{Mode: mode, MaxInactiveDurationSeconds: int(j.MaxInactiveSeconds),
			DeleteWhileInactive: j.DeleteWhileInactive}
		return func(p *broker.Policies) { p.InactiveTopics = &v }, err
	},
	remove:  func(p *broker.Policies) { p.InactiveTopics = nil },
	nsEmpty: emptyRemoves, topicEmpty: emptyRemoves,
	nsMissing:  noPolicies,
	topicUnset: http.StatusOK, applied: true,
}

// offloadFields are the fields of Pulsar's OffloadPoliciesImpl beyond
// the driver and the thresholds, and whether each is a number (else a
// string, or for managedLedgerExtraConfigurations an object).
var offloadFields = map[string]bool{
	"offloadersDirectory": false, "managedLedgerOffloadMaxThreads": true, "managedLedgerOffloadReadThreads": true,
	"managedLedgerOffloadPrefetchRounds": true, "managedLedgerOffloadedReadPriority": false,
	"managedLedgerExtraConfigurations": false,
	"s3ManagedLedgerOffloadRegion":     false, "s3ManagedLedgerOffloadBucket": false,
	"s3ManagedLedgerOffloadServiceEndpoint": false, "s3ManagedLedgerOffloadMaxBlockSizeInBytes": true,
	"s3ManagedLedgerOffloadReadBufferSizeInBytes": true, "s3ManagedLedgerOffloadCredentialId": false,
	"s3ManagedLedgerOffloadCredentialSecret": false, "s3ManagedLedgerOffloadRole": false,
	"s3ManagedLedgerOffloadRoleSessionName": false, "gcsManagedLedgerOffloadRegion": false,
	"gcsManagedLedgerOffloadBucket": false, "gcsManagedLedgerOffloadMaxBlockSizeInBytes": true,
	"gcsManagedLedgerOffloadReadBufferSizeInBytes": true, "gcsManagedLedgerOffloadServiceAccountKeyFile": false,
	"fileSystemProfilePath": false, "fileSystemURI": false, "managedLedgerOffloadBucket": false,
	"managedLedgerOffloadRegion": false, "managedLedgerOffloadServiceEndpoint": false,
	"managedLedgerOffloadMaxBlockSizeInBytes": true, "managedLedgerOffloadReadBufferSizeInBytes": true,
}

// offloadDefaults are the fields Pulsar writes for an offload policy that
// does not set them.
var offloadDefaults = map[string]any{
	"offloadersDirectory": "./offloaders", "managedLedgerOffloadMaxThreads": 2,
	"managedLedgerOffloadReadThreads": 2, "managedLedgerOffloadPrefetchRounds": 1,
	"managedLedgerExtraConfigurations":             map[string]string{},
	"s3ManagedLedgerOffloadMaxBlockSizeInBytes":    67108864,
	"s3ManagedLedgerOffloadReadBufferSizeInBytes":  1048576,
	"s3ManagedLedgerOffloadRoleSessionName":        "pulsar-s3-offload",
	"gcsManagedLedgerOffloadMaxBlockSizeInBytes":   134217728,
	"gcsManagedLedgerOffloadReadBufferSizeInBytes": 1048576,
}

// decodeOffloadPolicies reads an offloadPolicies body: the driver, the
// thresholds, and the other fields Pulsar knows (unknown ones are ignored,
// a null is unset, a number that does not parse is a 400).
func decodeOffloadPolicies(body []byte) (model.OffloadPolicies, error) {
	var fields map[string]json.RawMessage
	if err := decodeBody(body, &fields); err != nil {
		return model.OffloadPolicies{}, err
	}
	var o model.OffloadPolicies
	num := func(raw json.RawMessage) (*int64, error) {
		var n *flexInt
		if err := decodeBody(raw, &n); err != nil || n == nil {
			return nil, err
		}
		v := int64(*n)
		return &v, nil
	}
	for name, raw := range fields {
		if string(raw) == "null" {
			continue
		}
		var err error
		switch isNum, known := offloadFields[name]; {
		case name == "managedLedgerOffloadDriver":
			err = decodeBody(raw, &o.Driver)
		case name == "managedLedgerOffloadThresholdInBytes":
			o.ThresholdBytes, err = num(raw)
		case name == "managedLedgerOffloadThresholdInSeconds":
			o.ThresholdSeconds, err = num(raw)
		case name == "managedLedgerOffloadDeletionLagInMillis":
			o.DeletionLagMillis, err = num(raw)
		case !known:
		case name == "managedLedgerOffloadedReadPriority":
			// An enum: a name Pulsar does not know is null.
			var v string
			if err = decodeBody(raw, &v); err == nil && (v == "BOOKKEEPER_FIRST" || v == "TIERED_STORAGE_FIRST") {
				o.Settings = settingsWith(o.Settings, name, string(raw))
			}
		case isNum:
			var v *int64
			if v, err = num(raw); err == nil && v != nil {
				o.Settings = settingsWith(o.Settings, name, strconv.FormatInt(*v, 10))
			}
		default:
			o.Settings = settingsWith(o.Settings, name, string(raw))
		}
		if err != nil {
			return model.OffloadPolicies{}, err
		}
	}
	return o, nil
}

// settingsWith returns m (made if nil) with name set to v.
func settingsWith(m map[string]string, name, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[name] = v
	return m
}

// offloadPoliciesOut writes an offload policy as Pulsar does: its defaults,
// the fields set, and which kind of driver it names.
func offloadPoliciesOut(o model.OffloadPolicies) map[string]any {
	out := map[string]any{}
	for k, v := range offloadDefaults {
		out[k] = v
	}
	for k, v := range o.Settings {
		out[k] = json.RawMessage(v)
	}
	if o.Driver != "" {
		out["managedLedgerOffloadDriver"] = o.Driver
	}
	for k, v := range map[string]*int64{"managedLedgerOffloadThresholdInBytes": o.ThresholdBytes,
		"managedLedgerOffloadThresholdInSeconds":  o.ThresholdSeconds,
		"managedLedgerOffloadDeletionLagInMillis": o.DeletionLagMillis} {
		if v != nil {
			out[k] = *v
		}
	}
	out["s3Driver"] = strings.EqualFold(o.Driver, "S3") || strings.EqualFold(o.Driver, "aws-s3")
	// (Pulsar's driver kinds ignore case, as its check does.)
	out["gcsDriver"] = strings.EqualFold(o.Driver, "google-cloud-storage")
	out["fileSystemDriver"] = strings.EqualFold(o.Driver, "filesystem")
	return out
}

// persistenceJSON is PersistencePolicies.
type persistenceJSON struct {
	Ensemble          flexInt   `json:"bookkeeperEnsemble"`
	WriteQuorum       flexInt   `json:"bookkeeperWriteQuorum"`
	AckQuorum         flexInt   `json:"bookkeeperAckQuorum"`
	MaxMarkDeleteRate flexFloat `json:"managedLedgerMaxMarkDeleteRate"`
}

func persistenceOut(p model.Persistence) persistenceJSON {
	return persistenceJSON{flexInt(p.Ensemble), flexInt(p.WriteQuorum), flexInt(p.AckQuorum), flexFloat(p.MaxMarkDeleteRate)}
}

// subscribeRateJSON is SubscribeRate; Pulsar's missing fields are -1 and 30.
type subscribeRateJSON struct {
	PerConsumer   flexInt `json:"subscribeThrottlingRatePerConsumer"`
	PeriodSeconds flexInt `json:"ratePeriodInSecond"`
}

// inactiveTopicPoliciesJSON is InactiveTopicPolicies; a mode Pulsar does
// not know is left out.
type inactiveTopicPoliciesJSON struct {
	Mode                string  `json:"inactiveTopicDeleteMode,omitempty"`
	MaxInactiveSeconds  flexInt `json:"maxInactiveDurationSeconds"`
	DeleteWhileInactive bool    `json:"deleteWhileInactive"`
}

// flexFloat is a JSON number that may also come as a string ("1.5").
type flexFloat float64

// UnmarshalJSON reads a number or a quoted number.
func (f *flexFloat) UnmarshalJSON(b []byte) error {
	s := strings.Trim(strings.TrimSpace(string(b)), `"`)
	if s == "null" {
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	*f = flexFloat(v)
	return nil
}

// MarshalJSON writes the number as Java does, with a decimal point.
func (f flexFloat) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(float64(f))
	if err == nil && !strings.ContainsAny(string(b), ".eE") {
		b = append(b, ".0"...)
	}
	return b, err
}
