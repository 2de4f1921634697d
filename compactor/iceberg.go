package compactor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
)

// The Iceberg job appends each topic's committed batches to the topic's
// table (package iceberg) once they are iceberg.lag old, one Append (one
// snapshot) per table per pass, bounded by IcebergMaxBytes of batches.
// A table is written under its own lease (metadata.IcebergLease),
// released after its pass, so that replicas, which visit the tables in
// random order, spread the tables between them; the lease's cursor keeps
// the table's watermark for DescribeTopic. Append is exactly once by the
// table's watermark: after any failure the next pass starts again from the
// watermark it reloads.

// icebergPass appends to every enabled topic's table.
func (c *Compactor) icebergPass(ctx context.Context, r *Report) error {
	topics, err := c.meta.ListTopics(ctx)
	if err != nil {
		return err
	}
	rand.Shuffle(len(topics), func(i, j int) { topics[i], topics[j] = topics[j], topics[i] })
	var errs []error
	for _, t := range topics {
		ic, err := metadata.ParseIceberg(t.Config)
		if err != nil || !ic.Enabled {
			continue
		}
		lease := metadata.IcebergLease(t.Name)
		held, err := c.hold(ctx, lease)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !held {
			r.NotHeld = append(r.NotHeld, lease)
			continue
		}
		wm, snap, err := c.icebergAppend(ctx, t, ic, r)
		if err == nil {
			// Maintenance when due, then the table's figures in the lease
			// cursor (for describe and the console) and the metrics
			// (maintain.go).
			err = c.recordIceberg(ctx, t, ic, lease, wm, snap)
		}
		c.releaseLease(ctx, lease)
		if errors.Is(err, metadata.ErrTopicNotFound) {
			continue
		}
		if err != nil {
			c.m.icebergFailures.Inc()
			errs = append(errs, fmt.Errorf("topic %s: %w", t.Name, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	c.forgetTables(enabledTopics(topics))
	c.forgetIcebergNext(topics)
	if err := c.dropDeletedTables(ctx); err != nil {
		errs = append(errs, fmt.Errorf("drop deleted topics' tables: %w", err))
	}
	return errors.Join(errs...)
}

// forgetIcebergNext keeps the partition to start at of live topics only.
func (c *Compactor) forgetIcebergNext(topics []metadata.Topic) {
	live := make(map[int64]bool, len(topics))
	for _, t := range topics {
		live[t.ID] = true
	}
	for id := range c.icebergNext {
		if !live[id] {
			delete(c.icebergNext, id)
		}
	}
}

// icebergTable makes one append to t's table: per partition, the batches
// from the table's watermark on that are older than ic.Lag. It returns the
// table's watermark after it.
func (c *Compactor) icebergTable(ctx context.Context, t metadata.Topic, ic metadata.Iceberg, r *Report) (iceberg.Watermark, error) {
	wm, _, err := c.icebergAppend(ctx, t, ic, r)
	return wm, err
}

// icebergAppend is icebergTable that also returns the snapshot it
// committed (0 when none).
func (c *Compactor) icebergAppend(ctx context.Context, t metadata.Topic, ic metadata.Iceberg, r *Report) (iceberg.Watermark, int64, error) {
	w := c.cfg.Iceberg
	if err := c.retireStaleTable(ctx, t); err != nil {
		return nil, 0, err
	}
	have, err := w.Watermark(ctx, t.Name)
	if err != nil {
		return nil, 0, err
	}
	now, err := c.meta.Now(ctx)
	if err != nil {
		return nil, 0, err
	}
	cutoff := now.Add(-ic.Lag).UnixMilli()
	states, err := c.meta.PartitionStates(ctx, t.ID)
	if err != nil {
		return nil, 0, err
	}
	// One budget for the whole table, whatever its partition count: the
	// partitions are visited from where the last pass was cut (so that a
	// busy partition does not starve the others), and once the budget is
	// spent the rest wait for the next pass.
	budget := c.cfg.IcebergMaxBytes
	from := c.icebergNext[t.ID]
	c.icebergNext[t.ID] = 0
	want := iceberg.Watermark{}
	var (
		rows    []iceberg.Row
		batches int
		bytes   int64
		full    bool
	)
	for i := range states {
		at := (from + i) % len(states)
		st := states[at]
		start := icebergStart(have[st.Partition], st.LogStartOffset)
		if start >= st.HighWatermark {
			if start > have[st.Partition] {
				want[st.Partition] = start
			}
			continue
		}
		if full {
			continue // the budget is spent: this partition's batches wait for the next pass
		}
		refs, _, err := c.meta.FindBatches(ctx, t.ID, st.Partition, start, budget-bytes)
		var oor *metadata.OffsetOutOfRangeError
		if errors.As(err, &oor) {
			continue // retention moved meanwhile: the next pass starts from the new log start
		}
		if err != nil {
			return nil, 0, err
		}
		n, next, nb, cut := icebergTake(refs, start, cutoff, budget-bytes, batches == 0)
		if next > have[st.Partition] {
			want[st.Partition] = next
		}
		if cut {
			full = true
			c.icebergNext[t.ID] = at // first in line next pass
		}
		if n == 0 {
			continue
		}
		raw, err := c.readBatches(ctx, refs[:n])
		if err != nil {
			return nil, 0, err
		}
		for i, b := range refs[:n] {
			appendTime := time.UnixMilli(b.LogAppendTime)
			err := eachKafkaBatch(raw[i], b.BaseOffset, func(base int64, info kbatch.Info, kb []byte) error {
				_, recs, err := kbatch.DecodeStored(kb, 0)
				if err != nil {
					return err
				}
				for j := range recs {
					recs[j].Offset = base + recs[j].Offset - info.BaseOffset
				}
				recs = slices.DeleteFunc(recs, func(rec kbatch.Record) bool { return rec.Offset < start })
				rows = iceberg.AppendRecords(rows, st.Partition, appendTime, recs)
				return nil
			})
			if err != nil {
				return nil, 0, fmt.Errorf("batch %d of %s: %w", b.BaseOffset, b.FileKey, err)
			}
		}
		batches += n
		bytes += nb
	}
	if len(want) == 0 {
		return have, 0, nil
	}
	// The partitions were visited from where the last pass was cut, and
	// an append takes rows in partition order: each partition's rows are
	// in offset order already.
	slices.SortStableFunc(rows, func(a, b iceberg.Row) int { return cmp.Compare(a.Partition, b.Partition) })
	if err := c.renew(ctx, metadata.IcebergLease(t.Name)); err != nil {
		return nil, 0, err
	}
	started := time.Now()
	if err := c.icebergTyped(ctx, t, rows, have.Merge(want)); err != nil {
		return nil, 0, err
	}
	res, err := w.Append(ctx, t.Name, rows, have.Merge(want))
	if err != nil {
		return nil, 0, err
	}
	r.IcebergAppends++
	r.IcebergRows += res.Rows
	if full {
		r.IcebergBehind++
	}
	c.m.icebergRows.Add(float64(res.Rows))
	c.m.icebergBytes.Add(float64(bytes))
	c.log.Info("table appended", "topic", t.Name, "batches", batches, "rows", res.Rows, "files", res.Files,
		"bytes", res.Bytes, "watermark", res.Watermark.String(), "attempts", res.Attempts, "took", time.Since(started))
	return res.Watermark, res.SnapshotID, nil
}

// icebergTyped prepares the typed columns of rows for t's value schema, if
// it has one (iceberg/typed.go): it evolves the table to the schema's
// columns, marks the rows whose value conforms, and appends those that
// do not to the topic's rejected table, with their reason, before the
// table's append of the same range (want), so that they are never lost
// and never block the table. After a failure the next pass replays the
// range from the table's watermark, and AppendRejected writes only what
// its own watermark does not cover.
func (c *Compactor) icebergTyped(ctx context.Context, t metadata.Topic, rows []iceberg.Row, want iceberg.Watermark) error {
	vs, err := metadata.ParseValueSchema(t.Config)
	if err != nil {
		// Validated when it was set: a newer floe wrote it. The rows go in
		// without typed columns.
		c.log.Warn("iceberg: value schema unreadable, no typed columns", "topic", t.Name, "err", err)
		return nil
	}
	if vs == nil {
		return nil
	}
	w := c.cfg.Iceberg
	var rejected []iceberg.Row
	_, err = w.EnsureTable(ctx, t.Name, iceberg.WithValueSchema(vs))
	switch {
	case errors.Is(err, iceberg.ErrSchemaConflict):
		c.log.Error("iceberg: the table's columns conflict with the value schema; values go to the rejected table",
			"topic", t.Name, "err", err)
		rejected = iceberg.RejectRows(rows, err.Error())
	case err != nil:
		return err
	default:
		rejected = iceberg.TypeRows(vs, rows)
	}
	if len(rejected) == 0 {
		return nil
	}
	res, err := w.AppendRejected(ctx, t.Name, rejected, want)
	if err != nil {
		return fmt.Errorf("rejected table: %w", err)
	}
	c.log.Warn("iceberg: values that do not conform to the value schema appended to the rejected table",
		"topic", t.Name, "rows", res.Rows, "first_reason", rejected[0].Reason, "watermark", res.Watermark.String())
	return nil
}

// readBatches returns the bytes of each batch, one range GET per file
// (from its first batch to its last).
func (c *Compactor) readBatches(ctx context.Context, refs []metadata.BatchRef) ([][]byte, error) {
	bs := make([]metadata.CompactBatch, len(refs))
	for i, b := range refs {
		bs[i] = metadata.CompactBatch{FileKey: b.FileKey, FileSize: b.FileSize, ByteOffset: b.ByteOffset, ByteLength: b.ByteLength}
	}
	return c.readSection(ctx, bs)
}

// icebergHold returns the watermark of t's table that retention must not
// pass, or nil when retention need not wait (no table writer, or the
// topic's table is off).
func (c *Compactor) icebergHold(ctx context.Context, t metadata.Topic) (map[int32]int64, error) {
	if c.cfg.Iceberg == nil {
		return nil, nil
	}
	ic, err := metadata.ParseIceberg(t.Config)
	if err != nil || !ic.Enabled {
		return nil, nil
	}
	hold := map[int32]int64{}
	if _, stale, err := c.staleTable(ctx, t); err != nil || stale {
		return hold, err // the table is a deleted topic's: hold everything until it is renamed
	}
	wm, err := c.cfg.Iceberg.Watermark(ctx, t.Name)
	if err != nil {
		return nil, fmt.Errorf("table watermark: %w", err)
	}
	for p, o := range wm {
		hold[p] = o
	}
	return hold, nil
}
