package agent

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// Bytes behind a group's positions, kept incrementally for the lag scrape:
// the figure of the previous scrape, less the batches consumed since (by
// last offset) and plus those appended since (by base offset), so that a
// scrape sums only what moved, not every batch behind each position. The
// whole range is summed again when the previous figure cannot be carried
// (first sight, a position moved back, retention deleted batches it
// counted, the position passed the previous high watermark) and every
// lagBytesRefresh (keyed compaction rewrites batches in place).

// lagBytesRefresh bounds how long an incremental figure is carried before
// the whole range is summed again.
const lagBytesRefresh = 10 * time.Minute

// bytesFigure is one partition's bytes behind a group's position.
type bytesFigure struct {
	from, hw, bytes int64
	summed          time.Time // when the whole range was last summed
	seen            uint64    // the scrape that last used it
}

// bytesStep is how to get the figure now.
type bytesStep struct {
	zero, reuse, full bool
	// Otherwise: subtract the batches with last offset in [subFrom,
	// subTo) and add those with base offset in [addFrom, addTo) (empty
	// ranges when from == subFrom or addFrom == addTo).
	subFrom, subTo, addFrom, addTo int64
}

// planBytes decides how to get the bytes behind position from (the group's
// position, at least the log start ls) up to hw, given the previous figure
// (have false when none).
func planBytes(prev bytesFigure, have bool, from, hw, ls int64, now time.Time) bytesStep {
	switch {
	case from >= hw:
		return bytesStep{zero: true}
	case !have || now.Sub(prev.summed) >= lagBytesRefresh || from < prev.from || hw < prev.hw ||
		from > prev.hw || ls > prev.from:
		return bytesStep{full: true}
	case from == prev.from && hw == prev.hw:
		return bytesStep{reuse: true}
	}
	return bytesStep{subFrom: prev.from, subTo: from, addFrom: prev.hw, addTo: hw}
}

// ranges are the BatchBytes ranges of a step on (topic, partition) at
// position from and high watermark hw: one for a full sum, two for a delta.
func (st bytesStep) ranges(tp metadata.TopicPartition, from, hw int64) []metadata.BatchRange {
	r := metadata.BatchRange{TopicID: tp.TopicID, Partition: tp.Partition}
	switch {
	case st.zero, st.reuse:
		return nil
	case st.full:
		r.LastFrom, r.LastTo, r.BaseFrom, r.BaseTo = from, math.MaxInt64, 0, hw
		return []metadata.BatchRange{r}
	}
	sub, add := r, r
	sub.LastFrom, sub.LastTo, sub.BaseFrom, sub.BaseTo = st.subFrom, st.subTo, 0, math.MaxInt64
	add.LastFrom, add.LastTo, add.BaseFrom, add.BaseTo = 0, math.MaxInt64, st.addFrom, st.addTo
	return []metadata.BatchRange{sub, add}
}

// apply computes the figure from the previous one and the sums of the
// step's ranges.
func (st bytesStep) apply(prev bytesFigure, sums []int64, from, hw int64, now time.Time) bytesFigure {
	f := bytesFigure{from: from, hw: hw, summed: prev.summed}
	switch {
	case st.zero:
		f.summed = now
	case st.reuse:
		f.bytes = prev.bytes
	case st.full:
		f.bytes, f.summed = sums[0], now
	default:
		f.bytes = prev.bytes - sums[0] + sums[1]
	}
	return f
}

// lagBytes keeps the figures of the groups the scrape exports.
type lagBytes struct {
	mu      sync.Mutex // protects figures and scrape
	figures map[lagKey]bytesFigure
	scrape  uint64
}

type lagKey struct {
	group string
	tp    metadata.TopicPartition
}

func newLagBytes() *lagBytes { return &lagBytes{figures: make(map[lagKey]bytesFigure)} }

// fill sets BytesBehind of every partition of gs with one BatchBytes
// call, and forgets the figures of partitions gs no longer has (the
// figures kept are those of the last scrape: bounded by its cap).
func (b *lagBytes) fill(ctx context.Context, meta metadata.GroupStore, gs []metadata.GroupLagInputs, now time.Time) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.scrape++
	type pending struct {
		l         *metadata.PartitionLagInput
		key       lagKey
		step      bytesStep
		prev      bytesFigure
		from, at  int
		pos, high int64
	}
	var ps []pending
	var ranges []metadata.BatchRange
	for gi := range gs {
		for pi := range gs[gi].Partitions {
			l := &gs[gi].Partitions[pi]
			k := lagKey{gs[gi].Group, metadata.TopicPartition{TopicID: l.TopicID, Partition: l.Partition}}
			prev, have := b.figures[k]
			from := max(l.Committed, l.LogStartOffset)
			st := planBytes(prev, have, from, l.HighWatermark, l.LogStartOffset, now)
			rs := st.ranges(k.tp, from, l.HighWatermark)
			ps = append(ps, pending{l: l, key: k, step: st, prev: prev, from: len(ranges), at: len(ranges) + len(rs),
				pos: from, high: l.HighWatermark})
			ranges = append(ranges, rs...)
		}
	}
	sums, err := meta.BatchBytes(ctx, ranges)
	if err != nil {
		return err
	}
	for _, p := range ps {
		f := p.step.apply(p.prev, sums[p.from:p.at], p.pos, p.high, now)
		f.seen = b.scrape
		b.figures[p.key] = f
		p.l.BytesBehind = f.bytes
	}
	for k, f := range b.figures {
		if f.seen != b.scrape {
			delete(b.figures, k)
		}
	}
	return nil
}
