package metadata

import (
	"fmt"
	"strconv"
	"time"
)

// Iceberg output configuration keys and their defaults: every topic is
// also an Iceberg table (package iceberg) unless iceberg.enabled=false; the
// compactor appends batches once they are iceberg.lag old.
const (
	ConfigIcebergEnabled = "iceberg.enabled"
	// ConfigIcebergLag is a duration ("1m", "30s", "500ms") or an integer
	// number of milliseconds, >= 0.
	ConfigIcebergLag = "iceberg.lag"

	DefaultIcebergLag = time.Minute
)

// Iceberg is a topic's parsed Iceberg output configuration.
type Iceberg struct {
	Enabled bool
	Lag     time.Duration
}

// ParseIceberg reads iceberg.enabled and iceberg.lag from a topic's
// config, with their defaults for absent keys.
func ParseIceberg(cfg map[string]string) (Iceberg, error) {
	ic := Iceberg{Enabled: true, Lag: DefaultIcebergLag}
	if v, ok := cfg[ConfigIcebergEnabled]; ok {
		switch v {
		case "true":
		case "false":
			ic.Enabled = false
		default:
			return ic, fmt.Errorf("%w: %s=%q, want true or false", ErrInvalidConfig, ConfigIcebergEnabled, v)
		}
	}
	if v, ok := cfg[ConfigIcebergLag]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			var ms int64
			ms, err = strconv.ParseInt(v, 10, 64)
			d = durationMs(ms)
		}
		if err != nil || d < 0 {
			return ic, fmt.Errorf("%w: %s=%q, want a duration >= 0 such as 1m, 30s or 500ms (or milliseconds)",
				ErrInvalidConfig, ConfigIcebergLag, v)
		}
		ic.Lag = d
	}
	return ic, nil
}

// HoldLogStart bounds a retention target of a partition by hold, the
// offsets an Iceberg table still needs: with hold non-nil, the log start
// never passes hold[partition] (0 for a partition hold does not list).
// A nil hold bounds nothing.
func HoldLogStart(target int64, partition int32, hold map[int32]int64) int64 {
	if hold == nil {
		return target
	}
	return min(target, hold[partition])
}
