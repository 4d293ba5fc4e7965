package main

import (
	"flag"
	"fmt"
	"strconv"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
)

// quotaFlags are the backlog quota settings of the broker configuration.
type quotaFlags struct {
	interval     *time.Duration
	precise      *bool
	limitBytes   *int64
	limitSeconds *int
	policy       *string
}

func addQuotaFlags(fs *flag.FlagSet) quotaFlags {
	return quotaFlags{
		interval: fs.Duration("backlog-quota-check-interval", 60*time.Second,
			"how often backlog quotas are applied (backlogQuotaCheckIntervalInSeconds; 0: never, backlogQuotaCheckEnabled=false)"),
		precise: fs.Bool("precise-backlog-quota-check", false,
			"message_age quotas read the oldest unacknowledged message's publish time (preciseTimeBasedBacklogQuotaCheck)"),
		limitBytes: fs.Int64("backlog-quota-default-limit-bytes", -1,
			"the broker's destination_storage backlog quota in bytes (backlogQuotaDefaultLimitBytes; -1: none)"),
		limitSeconds: fs.Int("backlog-quota-default-limit-seconds", -1,
			"the broker's message_age backlog quota in seconds (backlogQuotaDefaultLimitSecond; -1: none)"),
		policy: fs.String("backlog-quota-default-policy", string(broker.ProducerRequestHold),
			"the policy of the broker's backlog quotas (backlogQuotaDefaultRetentionPolicy): producer_request_hold, producer_exception or consumer_backlog_eviction"),
	}
}

// brokerOptions returns the broker options the quota flags set.
func (q quotaFlags) brokerOptions() ([]broker.Option, error) {
	policy := broker.BacklogQuotaPolicy(*q.policy)
	size := broker.BacklogQuota{LimitBytes: *q.limitBytes, LimitSeconds: *q.limitSeconds, Policy: policy}
	defaults := broker.Policies{BacklogQuota: &size, MessageAgeBacklogQuota: new(size)}
	if err := broker.ValidatePolicies(defaults); err != nil {
		return nil, fmt.Errorf("-backlog-quota-default-policy %q: %w", *q.policy, err)
	}
	return []broker.Option{
		broker.WithBacklogQuotaCheckInterval(*q.interval),
		broker.WithPreciseBacklogQuotaCheck(*q.precise),
		broker.WithDefaultPolicies(defaults),
	}, nil
}

// applyQuotaConf sets the quota flags from a standalone.conf's keys.
func applyQuotaConf(conf map[string]string, set func(key, name, value string) error) error {
	if v := conf["backlogQuotaCheckIntervalInSeconds"]; v != "" {
		if err := set("backlogQuotaCheckIntervalInSeconds", "backlog-quota-check-interval", v+"s"); err != nil {
			return err
		}
	}
	if conf["backlogQuotaCheckEnabled"] == "false" {
		if err := set("backlogQuotaCheckEnabled", "backlog-quota-check-interval", "0s"); err != nil {
			return err
		}
	}
	// backlogQuotaDefaultLimitGB, when positive, wins over the bytes.
	if gb, err := strconv.ParseFloat(conf["backlogQuotaDefaultLimitGB"], 64); err == nil && gb > 0 {
		if err := set("backlogQuotaDefaultLimitGB", "backlog-quota-default-limit-bytes", strconv.FormatInt(int64(gb*(1<<30)), 10)); err != nil {
			return err
		}
	}
	return nil
}
