package admin

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/pulsarsim/pulsarsim/broker"
)

// The JSON shapes of the policies, as Pulsar's REST API writes and reads
// them. Reading follows Jackson's habits there: a missing field is zero
// (or Pulsar's own default), a number may come quoted, unknown fields are
// ignored.

// flexInt is a JSON integer that may also come as a string ("10240").
type flexInt int64

// UnmarshalJSON reads a number or a quoted number.
func (n *flexInt) UnmarshalJSON(b []byte) error {
	s := strings.Trim(strings.TrimSpace(string(b)), `"`)
	if s == "null" {
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return &numberError{value: strings.TrimSpace(string(b)), javaType: "int"}
	}
	*n = flexInt(v)
	return nil
}

// retentionJSON is RetentionPolicies.
type retentionJSON struct {
	Minutes flexInt `json:"retentionTimeInMinutes"`
	SizeMB  flexInt `json:"retentionSizeInMB"`
}

func retentionOut(r broker.Retention) retentionJSON {
	return retentionJSON{flexInt(r.Minutes), flexInt(r.SizeMB)}
}

// dispatchRateJSON is DispatchRate.
type dispatchRateJSON struct {
	Messages              flexInt `json:"dispatchThrottlingRateInMsg"`
	Bytes                 flexInt `json:"dispatchThrottlingRateInByte"`
	RelativeToPublishRate bool    `json:"relativeToPublishRate"`
	PeriodSeconds         flexInt `json:"ratePeriodInSecond"`
}

func dispatchRateOut(d broker.DispatchRate) dispatchRateJSON {
	return dispatchRateJSON{flexInt(d.Messages), flexInt(d.Bytes), d.RelativeToPublishRate, flexInt(d.PeriodSeconds)}
}

// publishRateJSON is PublishRate; Pulsar's missing fields are -1.
type publishRateJSON struct {
	Messages flexInt `json:"publishThrottlingRateInMsg"`
	Bytes    flexInt `json:"publishThrottlingRateInByte"`
}

// backlogQuotaJSON is BacklogQuota, with its deprecated "limit" (the same
// as limitSize).
type backlogQuotaJSON struct {
	Limit     *flexInt `json:"limit,omitempty"`
	LimitSize *flexInt `json:"limitSize,omitempty"`
	LimitTime flexInt  `json:"limitTime"`
	Policy    string   `json:"policy"`
}

func backlogQuotaOut(q broker.BacklogQuota) backlogQuotaJSON {
	size := flexInt(q.LimitBytes)
	return backlogQuotaJSON{Limit: &size, LimitSize: &size, LimitTime: flexInt(q.LimitSeconds), Policy: string(q.Policy)}
}

// delayedDeliveryJSON is DelayedDeliveryPolicies.
type delayedDeliveryJSON struct {
	TickTime       flexInt `json:"tickTime"`
	Active         bool    `json:"active"`
	MaxDelayMillis flexInt `json:"maxDeliveryDelayInMillis"`
}

func delayedDeliveryOut(d broker.DelayedDelivery) delayedDeliveryJSON {
	return delayedDeliveryJSON{flexInt(d.TickMillis), d.Active, flexInt(d.MaxDelayMillis)}
}

// decodeBody reads a JSON body into v; a body that does not parse as v is a
// 400, as Jersey answers it.
func decodeBody(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return badBody(body, err)
	}
	return nil
}

// decodeIntBody reads an int policy's body: a number, quoted or not.
func decodeIntBody(body []byte) (int, error) {
	var n flexInt
	if err := decodeBody(body, &n); err != nil {
		return 0, err
	}
	return int(n), nil
}

// decodeBoolBody reads a bool policy's body: true or false, quoted or not.
func decodeBoolBody(body []byte) (bool, error) {
	text := strings.TrimSpace(string(body))
	v, err := strconv.ParseBool(strings.Trim(text, `"`))
	if err == nil {
		return v, nil
	}
	if !strings.HasPrefix(text, `"`) {
		return false, &bodyError{msg: syntaxMessage(body, len(body), "")}
	}
	return false, &bodyError{msg: fmt.Sprintf("Cannot deserialize value of type `boolean` from String %s: "+
		`only "true"/"True"/"TRUE" or "false"/"False"/"FALSE" recognized`, text) + location(body, strings.Index(string(body), `"`))}
}

// decodeBacklogQuota reads a BacklogQuota body. A policy Pulsar does not
// know reads as none.
func decodeBacklogQuota(body []byte) (broker.BacklogQuota, error) {
	var j backlogQuotaJSON
	if err := decodeBody(body, &j); err != nil {
		return broker.BacklogQuota{}, err
	}
	q := broker.BacklogQuota{LimitSeconds: int(j.LimitTime), Policy: broker.BacklogQuotaPolicy(j.Policy)}
	switch {
	case j.LimitSize != nil:
		q.LimitBytes = int64(*j.LimitSize)
	case j.Limit != nil:
		q.LimitBytes = int64(*j.Limit)
	}
	return q, nil
}
