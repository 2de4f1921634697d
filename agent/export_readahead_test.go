package agent

import (
	"context"
	"time"
)

// SetReadahead sets the read-ahead's minimum lag (bytes behind the head)
// and idle period; call it before the agent serves reads.
func SetReadahead(a *Agent, minLag int64, idle time.Duration) {
	a.loads.Readahead().Tune(minLag, idle)
}

// ReadaheadStats returns the read-ahead budget taken, the bytes readers
// took from it and its streams.
func ReadaheadStats(a *Agent) (held, served int64, streams int) {
	return a.loads.Readahead().Stats()
}

// ReadRangeBytes reads partition p of topic from offset through readRange
// (the read path of fetch, subscribe and the batch data plane) and returns
// the bytes read, the next offset, the high watermark and the files read
// (key to size).
func ReadRangeBytes(ctx context.Context, a *Agent, topic string, p int32, offset int64, maxBytes int, files map[string]int64) (n, next, hw int64, err error) {
	t, err := a.topics.get(ctx, topic)
	if err != nil {
		return 0, offset, 0, err
	}
	refs, raw, _, st, err := a.readRange(ctx, t.ID, p, offset, maxBytes)
	if err != nil || len(refs) == 0 {
		return 0, offset, st.HighWatermark, err
	}
	for i, r := range refs {
		n += int64(len(raw[i]))
		files[r.FileKey] = r.FileSize
	}
	return n, refs[len(refs)-1].LastOffset + 1, st.HighWatermark, nil
}
