package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/floe-broker/floe/chaos/history"
	"github.com/floe-broker/floe/iceberg"
)

// The stores' invariants checked after each run (Result.Invariants).
const (
	// MissingObject: a file the metadata references (committed) is not in
	// the object store.
	MissingObject = "missing-object"
	// OrphanLeft: an object of floe's file prefix that the metadata does
	// not know was still there after the orphan age and a margin.
	OrphanLeft = "orphan-left"
	// DeletionStuck: files marked for deletion still marked after the
	// grace period and a margin.
	DeletionStuck = "deletion-queue-stuck"
	// GroupNotDrained: a partition whose group position had not reached
	// its high watermark a minute after the faults ended, although the
	// members ran.
	GroupNotDrained = "group-not-drained"
	// RetentionPastHold: a partition's log start past the offsets its
	// topic's Iceberg table holds (docs/retention.md: retention never moves
	// past the table's watermark). Groups hold nothing: retention does not
	// wait for a group's committed offset.
	RetentionPastHold = "retention-past-hold"
	// RetentionWithin: an acknowledged record deleted before it was
	// retention old (retention.ms, or retention.raw.ms for the raw log).
	RetentionWithin = "retention-within-window"
	// InvariantUnchecked: a check could not run (its store did not answer).
	InvariantUnchecked = "invariant-unchecked"
)

// filesPrefix is where agents write their files (no -s3-prefix).
const filesPrefix = "v1/files/"

// checkInvariants checks the stores directly (not through the proxies).
func checkInvariants(ctx context.Context, d *Deployment, compactor bool, out map[string]int) {
	conn, err := pgx.Connect(ctx, d.directPG())
	if err != nil {
		out[InvariantUnchecked]++
		return
	}
	defer conn.Close(context.Background())
	s3c := d.S3.Client()
	known := func() (map[string]string, error) { // key -> state
		rows, err := conn.Query(ctx, "SELECT key, state FROM files")
		if err != nil {
			return nil, err
		}
		m := map[string]string{}
		for rows.Next() {
			var k, s string
			if err := rows.Scan(&k, &s); err != nil {
				return nil, err
			}
			m[k] = s
		}
		return m, rows.Err()
	}
	listed := func() (map[string]bool, error) {
		m := map[string]bool{}
		pg := s3.NewListObjectsV2Paginator(s3c, &s3.ListObjectsV2Input{Bucket: aws.String(Bucket), Prefix: aws.String(filesPrefix)})
		for pg.HasMorePages() {
			page, err := pg.NextPage(ctx)
			if err != nil {
				return nil, err
			}
			for _, o := range page.Contents {
				m[aws.ToString(o.Key)] = true
			}
		}
		return m, nil
	}
	files, err1 := known()
	objects, err2 := listed()
	if err1 != nil || err2 != nil {
		out[InvariantUnchecked]++
		return
	}
	for k, state := range files {
		if state == "committed" && !objects[k] {
			out[MissingObject]++
		}
	}
	if !compactor {
		return
	}
	// Orphans and the deletion queue: wait for the compactor to collect
	// them, within the orphan age, the grace and a margin.
	deadline := time.Now().Add(orphanAge + compactorGrace + 45*time.Second)
	var orphans, deleting int
	for {
		files, err1 = known()
		objects, err2 = listed()
		if err1 == nil && err2 == nil {
			orphans, deleting = 0, 0
			for k := range objects {
				if _, ok := files[k]; !ok {
					orphans++
				}
			}
			for _, s := range files {
				if s == "deleting" {
					deleting++
				}
			}
			if orphans == 0 && deleting == 0 {
				return
			}
		}
		if time.Now().After(deadline) || !sleep(ctx, time.Second) {
			break
		}
	}
	if orphans > 0 {
		out[OrphanLeft] += orphans
	}
	if deleting > 0 {
		out[DeletionStuck] += deleting
	}
}

// scanTable waits until the table's watermark reached every partition's
// high watermark (or two minutes passed), then records the table's rows
// and watermark.
func (w *workload) scanTable(ctx context.Context, d *Deployment, hws map[int32]int64) error {
	wr, err := openTable(ctx, d, w)
	if err != nil {
		return fmt.Errorf("chaos: open the catalog: %w", err)
	}
	defer wr.Close()
	var wm iceberg.Watermark
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if wm, err = wr.Watermark(ctx, w.topic); err == nil {
			done := true
			for p, hw := range hws {
				done = done && wm[p] >= hw
			}
			if done {
				break
			}
		}
		if time.Now().After(deadline) || !sleep(ctx, time.Second) {
			break
		}
	}
	rows, err := wr.Scan(ctx, w.topic, 0)
	if err != nil {
		return fmt.Errorf("chaos: scan the table: %w", err)
	}
	for _, r := range rows {
		w.add(history.Op{Type: history.Table, Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value)})
	}
	for p, o := range wm {
		w.add(history.Op{Type: history.TableWatermark, Partition: p, Offset: o})
	}
	return nil
}

// openTable opens the Iceberg catalog straight on PostgreSQL and S3 (not
// through the proxies).
func openTable(ctx context.Context, d *Deployment, w *workload) (*iceberg.Writer, error) {
	cfg := iceberg.DefaultPostgresConfig(d.directPG(), Bucket)
	cfg.Warehouse = "s3://" + Bucket
	cfg.S3Endpoint, cfg.S3Region, cfg.S3AccessKey, cfg.S3SecretKey = d.S3.Endpoint, d.S3.Region, d.S3.AccessKey, d.S3.SecretKey
	return iceberg.Open(ctx, cfg, w.log)
}

// retentionPastHold counts the partitions whose log start was past the
// table's watermark: at a LogStart op, its Offset (the raw log start with
// raw) past the watermark read after it (From); and, without raw, the log
// start the final read found (FinalRead From) past the table's watermark
// as the scan after it found it (absent: 0). Log starts and watermarks
// only grow, so a watermark read later never makes a false alarm. table
// is whether the topic has a table.
func retentionPastHold(ops []history.Op, table, raw bool) int {
	if !table {
		return 0
	}
	past := map[int32]bool{}
	starts, wm := map[int32]int64{}, map[int32]int64{}
	for _, op := range ops {
		switch op.Type {
		case history.LogStart:
			if op.Offset > op.From {
				past[op.Partition] = true
			}
		case history.FinalRead:
			if !raw {
				starts[op.Partition] = op.From
			}
		case history.TableWatermark:
			wm[op.Partition] = max(wm[op.Partition], op.Offset)
		}
	}
	for p, start := range starts {
		if start > wm[p] {
			past[p] = true
		}
	}
	return len(past)
}
