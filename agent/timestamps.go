package agent

import (
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
)

// MaxTimestampMs is the latest record timestamp the agent accepts,
// whatever its settings: 9999-12-31T23:59:59.999Z. Within it every
// conversion of a timestamp (to microseconds for the Iceberg table, to
// time.Time and back) stays within int64; MaxInt64, before, was accepted
// and showed in the table as 1969.
const MaxTimestampMs = 253402300799999

// ReasonInvalidTimestamp (InvalidArgument): a record's timestamp is
// outside what the agent accepts (TimestampBeforeMax, TimestampAfterMax,
// MaxTimestampMs); the metadata names the limit.
const ReasonInvalidTimestamp = "INVALID_TIMESTAMP"

// timestampError returns nil when a record's create time ts (ms) is
// acceptable at now (ms) — at least 0, at most MaxTimestampMs, at most
// before earlier than now and after later (0: no bound), as Kafka's
// message.timestamp.before.max.ms and after.max.ms — or else the refusal
// naming the limit. what names the record in the message (called only for a
// refusal: the accepted path builds no string).
func timestampError(what func() string, ts, now int64, before, after time.Duration) error {
	limit, bound := "", ""
	switch {
	case ts < 0:
		limit, bound = "timestamp", "negative"
	case ts > MaxTimestampMs:
		limit, bound = "max_timestamp_ms", "after "+strconv.FormatInt(MaxTimestampMs, 10)+" (9999-12-31)"
	case before > 0 && ts < now-before.Milliseconds():
		limit, bound = "timestamp_before_max", "more than "+before.String()+" before the agent's clock"
	case after > 0 && ts > now+after.Milliseconds():
		limit, bound = "timestamp_after_max", "more than "+after.String()+" after the agent's clock"
	default:
		return nil
	}
	return statusInfo(codes.InvalidArgument, ReasonInvalidTimestamp, map[string]string{"limit": limit},
		"produce: %s has timestamp %d, %s (%s)", what(), ts, bound, limit)
}

// timestampsError checks a batch's timestamps (their least and greatest)
// as timestampError does.
func (c Config) timestampsError(what func() string, least, greatest, now int64) error {
	if err := timestampError(what, least, now, c.TimestampBeforeMax, c.TimestampAfterMax); err != nil {
		return err
	}
	return timestampError(what, greatest, now, c.TimestampBeforeMax, c.TimestampAfterMax)
}
