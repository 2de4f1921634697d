package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/tableread"
)

// Offsets below a partition's raw log start, served from the topic's
// Iceberg table: a topic that sets retention.raw.ms lets its raw files
// age out once the table holds their offsets (metadata.Retention.Raw),
// and reads below the raw log start come from the table's Parquet files,
// rebuilt as Kafka v2 batches at their offsets (package tableread).
// readRange is the one place that turns to the table, so Fetch (records
// and batches), Subscribe, groups and the Kafka listener serve those
// offsets as they serve stored batches; ListOffsets earliest reports the
// table's first offset, and a read below it is OutOfRange with that
// offset as the log start.

// TableReader reads a topic's table below the raw log start
// (tableread.Reader).
type TableReader interface {
	// ReadOwned returns the partition's records from offset from below
	// end, about maxBytes of them as batches (none: the table holds none
	// in [from, end)); free hands their buffer back for reuse once nothing
	// reads them (at most once; never calling it is safe).
	ReadOwned(ctx context.Context, topic string, partition int32, from, end int64, maxBytes int) (batches []tableread.Batch, free func(), err error)
	// Earliest returns the first offset the table holds of the
	// partition, false when it holds none below end.
	Earliest(ctx context.Context, topic string, partition int32, end int64) (int64, bool, error)
}

// tableTopics remembers, per topic id, its name and whether its table
// serves its old offsets (metadata.TableServes, and the compactor writes
// the table for this topic id), for TopicCacheTTL.
type tableTopics struct {
	ttl time.Duration

	mu   sync.Mutex // protects byID
	byID map[int64]tableTopic
}

type tableTopic struct {
	name   string
	serves bool
	at     time.Time
}

// maxTableTopics bounds the topics tableTopics remembers.
const maxTableTopics = 4096

// tableTopic returns topic id's name and whether the table serves it.
func (a *Agent) tableTopic(ctx context.Context, id int64) (tableTopic, error) {
	tt := a.tableTopicsCache()
	tt.mu.Lock()
	t, ok := tt.byID[id]
	tt.mu.Unlock()
	if ok && time.Since(t.at) < tt.ttl {
		return t, nil
	}
	topic, err := a.meta.TopicByID(ctx, id)
	if err != nil {
		return tableTopic{}, err
	}
	t = tableTopic{name: topic.Name, serves: metadata.TableServes(topic.Config), at: time.Now()}
	if t.serves {
		// The table must be this topic's, not a deleted one's of the same
		// name not yet renamed away: the compactor's cursor names the
		// topic id it writes the table for.
		cur, err := a.meta.JobCursor(ctx, metadata.IcebergLease(topic.Name))
		if err != nil {
			return tableTopic{}, err
		}
		c, ok := metadata.ReadIcebergCursor(cur)
		t.serves = ok && c.TopicID == id
	}
	tt.mu.Lock()
	if len(tt.byID) >= maxTableTopics {
		clear(tt.byID)
	}
	tt.byID[id] = t
	tt.mu.Unlock()
	return t, nil
}

// tableTopicsCache returns the agent's tableTopics, made on first use.
func (a *Agent) tableTopicsCache() *tableTopics {
	a.tableOnce.Do(func() { a.tableSeen = &tableTopics{ttl: a.cfg.TopicCacheTTL, byID: map[int64]tableTopic{}} })
	return a.tableSeen
}

// maxTableTurns bounds how often one read moves from the table to the
// raw log and back (the raw log start moving meanwhile).
const maxTableTurns = 3

// readTable is readRangeHeld below the raw log start (oor, what the
// metadata answered): from the table when it serves the topic, else oor
// itself. An offset below the table's first is OutOfRange with that first
// offset as the log start; an offset the table holds nothing from (up to
// the raw log start) reads the raw log from there. The rebuilt batches'
// buffer is h's to hand back (holds.own).
func (a *Agent) readTable(ctx context.Context, h *holds, topicID int64, partition int32, offset int64, maxBytes int, oor *metadata.OffsetOutOfRangeError, turn int) (refs []metadata.BatchRef, raw [][]byte, verified []bool, st metadata.PartitionState, err error) {
	st = metadata.PartitionState{Partition: partition, LogStartOffset: oor.LogStartOffset, HighWatermark: oor.HighWatermark}
	if a.tables == nil || turn >= maxTableTurns {
		return nil, nil, nil, st, oor
	}
	tt, err := a.tableTopic(ctx, topicID)
	if err != nil {
		return nil, nil, nil, st, err
	}
	if !tt.serves {
		return nil, nil, nil, st, oor
	}
	first, err := a.tableStart(ctx, topicID, tt, partition, oor.LogStartOffset)
	if err != nil {
		return nil, nil, nil, st, err
	}
	if first >= oor.LogStartOffset {
		return nil, nil, nil, st, oor // the table serves nothing below the raw log start
	}
	st.LogStartOffset = first
	if offset < first {
		return nil, nil, nil, st, &metadata.OffsetOutOfRangeError{Offset: offset, LogStartOffset: first, HighWatermark: oor.HighWatermark}
	}
	batches, free, err := a.tables.ReadOwned(ctx, tt.name, partition, offset, oor.LogStartOffset, maxBytes)
	if err != nil {
		return nil, nil, nil, st, tableError(tt.name, err)
	}
	h.own(free)
	if len(batches) == 0 {
		// Nothing left in the table up to the raw log start (a compacted
		// or expired stretch), at a snapshot that holds every offset below
		// it (tableread judges a stale snapshot's silence: it loads the
		// table afresh, and offsets the fresh table lacks are DataLoss):
		// the raw log from there.
		refs, raw, verified, rst, err := a.readRangeTurn(ctx, h, topicID, partition, oor.LogStartOffset, maxBytes, turn+1)
		rst.LogStartOffset = min(rst.LogStartOffset, first)
		return refs, raw, verified, rst, err
	}
	refs = make([]metadata.BatchRef, len(batches))
	raw = make([][]byte, len(batches))
	verified = make([]bool, len(batches))
	key := "iceberg:" + tt.name
	for i, b := range batches {
		refs[i] = metadata.BatchRef{TopicID: topicID, Partition: partition, BaseOffset: b.BaseOffset, LastOffset: b.LastOffset,
			FileKey: key, ByteLength: int64(len(b.Data)), RecordCount: b.Records, MaxTimestamp: b.MaxTime}
		// Built here, checksum and all: nothing to verify again.
		raw[i], verified[i] = b.Data, true
	}
	return refs, raw, verified, st, nil
}

// tableStart is where a partition of a topic its table serves (tt)
// starts given its raw log start: the table's first offset, raised to the
// floor DeleteRecords left (metadata.ServedLogStart). The floors are
// read afresh each time (one small query, next to a table read): a
// DeleteRecords on another agent holds here at once.
func (a *Agent) tableStart(ctx context.Context, topicID int64, tt tableTopic, partition int32, rawStart int64) (int64, error) {
	fl, err := a.meta.JobCursor(ctx, metadata.TableFloorJob(topicID))
	if err != nil {
		return 0, err
	}
	floor := metadata.ParseTableFloors(fl)[partition]
	if floor >= rawStart {
		return rawStart, nil // nothing below the raw log start is served: no catalog needed
	}
	first, ok, err := a.tables.Earliest(ctx, tt.name, partition, rawStart)
	if err != nil {
		return 0, tableError(tt.name, err)
	}
	return metadata.ServedLogStart(rawStart, first, ok, floor), nil
}

// tableError marks a failed table read: DataLoss for data that does not
// decode, a store failure (Unavailable) otherwise.
func tableError(topic string, err error) error {
	err = fmt.Errorf("agent: read the table of %q: %w", topic, err)
	if errors.Is(err, tableread.ErrDataLoss) {
		return &dataLossError{Err: err}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &objectStoreError{err}
}

// listOffset is metadata.Store.ListOffset, with earliest the table's
// first offset where the table serves the topic's old offsets.
func (a *Agent) listOffset(ctx context.Context, topicID int64, partition int32, spec metadata.OffsetSpec, ts int64) (int64, error) {
	off, err := a.meta.ListOffset(ctx, topicID, partition, spec, ts)
	if err != nil || spec != metadata.OffsetEarliest {
		return off, err
	}
	return a.earliest(ctx, topicID, partition, off)
}

// earliest is a partition's first readable offset given its raw log
// start: the table's first offset where the table serves the topic and
// holds offsets below it, else rawStart.
func (a *Agent) earliest(ctx context.Context, topicID int64, partition int32, rawStart int64) (int64, error) {
	if a.tables == nil {
		return rawStart, nil
	}
	tt, err := a.tableTopic(ctx, topicID)
	if err != nil || !tt.serves {
		return rawStart, err
	}
	return a.tableStart(ctx, topicID, tt, partition, rawStart)
}

// lagLogStart is the log start a group's lag counts from: rawStart, or,
// for a position below it on a topic its table serves, where the table
// serves from (the records from there are still to consume). The table
// unreachable, it is rawStart (logged): lag is never held up by the
// catalog.
func (a *Agent) lagLogStart(ctx context.Context, topicID int64, partition int32, rawStart, committed int64) int64 {
	if a.tables == nil || committed >= rawStart {
		return rawStart
	}
	start, err := a.earliest(ctx, topicID, partition, rawStart)
	if err != nil {
		a.log.Warn("group lag: the table's log start unavailable; counting from the raw log start", "topic_id", topicID, "partition", partition, "err", err)
		return rawStart
	}
	return start
}

// describeTableStarts sets the log start of a DescribeTopic answer's
// partitions to where a topic its table serves starts (earliest): what
// a consumer from the beginning reads. The table unreachable, the raw
// log starts stay (logged).
func (a *Agent) describeTableStarts(ctx context.Context, topicID int64, resp *floev1.DescribeTopicResponse) {
	if a.tables == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, describeStorageTimeout)
	defer cancel()
	for _, p := range resp.Partitions {
		start, err := a.earliest(ctx, topicID, p.Partition, p.LogStartOffset)
		if err != nil {
			a.log.Warn("describe topic: the table's log start unavailable", "topic_id", topicID, "partition", p.Partition, "err", err)
			return
		}
		p.LogStartOffset = start
	}
}
