package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pulsarsim/pulsarsim/broker"
)

// flagMinimums are the smallest values the numeric flags accept (durations
// in nanoseconds): below them a setting means nothing, or refuses
// everything (a max message size of 0 refuses every send).
var flagMinimums = map[string]int64{
	"max-message-size":                     1,
	"max-active-transactions":              0,
	"delete-inactive-topics-frequency":     1,
	"delete-inactive-topics-max-inactive":  0,
	"max-producers-per-topic":              0,
	"max-same-address-producers-per-topic": 0,
	"max-consumers-per-topic":              0,
	"max-same-address-consumers-per-topic": 0,
	"max-consumers-per-subscription":       0,
	"max-subscriptions-per-topic":          0,
	"max-connections":                      0,
	"max-connections-per-ip":               0,
	"write-buffer-low-water-mark":          0,
	"write-buffer-high-water-mark":         0,
	"handshake-timeout":                    0,
	"view-history":                         0,
	"backlog-quota-check-interval":         0,
	"backlog-quota-default-limit-bytes":    -1,
	"backlog-quota-default-limit-seconds":  -1,
	"auth-refresh":                         int64(time.Second),
	"brokers":                              1,
	"cluster-migration-check-seconds":      0,
	"default-num-partitions":               1,
	"max-partitions-per-topic":             0,
}

// flagChoices are the values the enumerated flags accept.
var flagChoices = map[string][]string{
	"backlog-quota-default-policy": {string(broker.ProducerRequestHold), string(broker.ProducerException),
		string(broker.ConsumerBacklogEviction)},
	"delete-inactive-topics-mode": {string(broker.DeleteWhenNoSubscriptions), string(broker.DeleteWhenSubscriptionsCaughtUp)},
	"load-manager":                loadManagerNames(),
	"auto-topic-creation-type":    {string(broker.TopicTypeNonPartitioned), string(broker.TopicTypePartitioned)},
}

// checkFlags refuses flag values outside what each flag accepts, naming
// the flag and what it accepts.
func checkFlags(fs *flag.FlagSet) error {
	var errs []string
	fs.VisitAll(func(f *flag.Flag) {
		if min, ok := flagMinimums[f.Name]; ok {
			var v int64
			switch x := f.Value.(flag.Getter).Get().(type) {
			case int:
				v = int64(x)
			case int64:
				v = x
			case time.Duration:
				v = int64(x)
				if v < min {
					errs = append(errs, fmt.Sprintf("-%s %s: must be at least %v", f.Name, f.Value, time.Duration(min)))
				}
				return
			}
			if v < min {
				errs = append(errs, fmt.Sprintf("-%s %s: must be at least %d", f.Name, f.Value, min))
			}
		}
		if values, ok := flagChoices[f.Name]; ok && !slices.Contains(values, f.Value.String()) {
			errs = append(errs, fmt.Sprintf("-%s %q: must be one of %s", f.Name, f.Value, strings.Join(values, ", ")))
		}
	})
	low, high := fs.Lookup("write-buffer-low-water-mark"), fs.Lookup("write-buffer-high-water-mark")
	if low != nil && high != nil {
		l, h := low.Value.(flag.Getter).Get().(int), high.Value.(flag.Getter).Get().(int)
		if h > 0 && l > h {
			errs = append(errs, fmt.Sprintf("-write-buffer-low-water-mark %d: must not be above -write-buffer-high-water-mark %d", l, h))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
