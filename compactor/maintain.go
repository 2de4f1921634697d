package compactor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/metadata"
)

// Table maintenance runs inside the Iceberg job's visit of a table
// (iceberg.go), under the same per-table lease, right after the append,
// at most every IcebergMaintainConfig.Interval per table (the time of the
// last maintenance is in the lease's cursor, by the metadata store's
// clock): it deletes the days the table's retention
// (iceberg.retention.ms) expired, rewrites small data files, expires old
// snapshots and deletes orphan files, renewing the lease between the
// steps, on the topic's table and then, in the same visit, on its
// rejected table (TABLE_rejected, iceberg/rejected.go) when it has one.
// After each visit it records the table's figures (watermark, last
// snapshot, rows, data files and bytes, last maintenance, the rejected
// table's rows, data files and bytes) in the cursor,
// which DescribeTopic reads, and exports them, with how far the table
// trails the log, as metrics. With DropDeletedTopics, tables of deleted
// topics are dropped (the catalog entry and the files), under the lease
// JobIcebergDrop, at most every Interval.

// JobIcebergDrop is the lease of dropping deleted topics' tables; its
// cursor holds when it last ran (unix ms).
const JobIcebergDrop = "iceberg-drop"

// IcebergMaintainConfig configures table maintenance.
type IcebergMaintainConfig struct {
	// Interval is the least time between two maintenances of a table;
	// 0 turns maintenance off.
	Interval time.Duration
	// KeepSnapshots is the fewest snapshots a table keeps; SnapshotAge the
	// age past which the older ones expire.
	KeepSnapshots int
	SnapshotAge   time.Duration
	// OrphanAge is how old a file under a table's location that nothing
	// references must be before it is deleted, and how long a snapshot
	// is kept after it was superseded (for the scans planned of it): more
	// than the longest append, rewrite or query; 0 deletes none.
	OrphanAge time.Duration
	// RewriteMinFiles: a day partition with more than this many small
	// files (under three quarters of the target file size) is rewritten;
	// 0 turns rewriting off. RewriteMaxBytes bounds the small files one
	// maintenance reads (0: twice the target file size).
	RewriteMinFiles int
	RewriteMaxBytes int64
	// DropDeletedTopics drops the tables of deleted topics (their rows
	// are lost); false keeps them.
	DropDeletedTopics bool
}

// DefaultIcebergMaintainConfig maintains each table hourly: keeps 10
// snapshots and a day of them, deletes files orphaned for a day, rewrites
// a day's small files once there are more than 10, keeps deleted topics'
// tables.
func DefaultIcebergMaintainConfig() IcebergMaintainConfig {
	return IcebergMaintainConfig{Interval: time.Hour, KeepSnapshots: 10, SnapshotAge: 24 * time.Hour,
		OrphanAge: 24 * time.Hour, RewriteMinFiles: 10}
}

func (m IcebergMaintainConfig) validate() error {
	if m.Interval < 0 || m.KeepSnapshots < 1 || m.SnapshotAge < 0 || m.OrphanAge < 0 || m.RewriteMinFiles < 0 || m.RewriteMaxBytes < 0 {
		return fmt.Errorf("compactor: config IcebergMaintain %+v: Interval, SnapshotAge, OrphanAge, RewriteMinFiles and RewriteMaxBytes must be >= 0, KeepSnapshots >= 1", m)
	}
	return nil
}

// icebergMetrics are the per-table figures (labels topic and table):
//
//	floe_iceberg_table_rows, _data_files, _data_bytes       at the last snapshot the compactor saw
//	floe_iceberg_table_lag_records, _lag_bytes, _lag_seconds how far the table trails the log
//	floe_iceberg_maintenance_expired_snapshots_total        snapshots expired
//	floe_iceberg_maintenance_rewritten_files_total          small files replaced by a rewrite
//	floe_iceberg_maintenance_orphan_files_total             orphan files deleted
//	floe_iceberg_maintenance_expired_files_total            data files deleted by the table's retention
//	floe_iceberg_rejected_rows                              rows of the topic's rejected table (label table: that table)
//	floe_iceberg_maintenance_failures_total                 maintenances that failed (retried next pass)
//	floe_iceberg_tables_dropped_total                       tables of deleted topics dropped
type icebergMetrics struct {
	rows, files, bytes, lagRecords, lagBytes, lagSeconds *prometheus.GaugeVec
	rejectedRows                                         *prometheus.GaugeVec
	expired, rewritten, orphans, expiredFiles            *prometheus.CounterVec
	failures, dropped                                    prometheus.Counter
}

func newIcebergMetrics(reg prometheus.Registerer) (*icebergMetrics, error) {
	labels := []string{"topic", "table"}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_iceberg_table_" + name, Help: help}, labels)
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "floe_iceberg_maintenance_" + name, Help: help}, labels)
	}
	m := &icebergMetrics{
		rows:       gauge("rows", "Rows of a topic's Iceberg table at its last snapshot the compactor saw."),
		files:      gauge("data_files", "Data files of a topic's Iceberg table."),
		bytes:      gauge("data_bytes", "Bytes of the data files of a topic's Iceberg table."),
		lagRecords: gauge("lag_records", "Offsets of the log (from each partition's log start) not in the table yet."),
		lagBytes:   gauge("lag_bytes", "Bytes of the log's batches not in the table yet (extrapolated past 4 MiB a partition)."),
		lagSeconds: gauge("lag_seconds", "Age of the oldest batch not in the table yet, by its append time (0 when caught up)."),
		rejectedRows: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "floe_iceberg_rejected_rows",
			Help: "Rows of the rejected table (TABLE_rejected) of a topic: values its value schema could not convert; label table is the rejected table, removed with the topic."}, labels),
		expired:      counter("expired_snapshots_total", "Snapshots of a table expired by maintenance."),
		rewritten:    counter("rewritten_files_total", "Small data files replaced by larger ones by maintenance."),
		orphans:      counter("orphan_files_total", "Orphan files (of failed commits, expired snapshots) deleted by maintenance."),
		expiredFiles: counter("expired_files_total", "Data files deleted by the table's retention (iceberg.retention.ms)."),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_iceberg_maintenance_failures_total",
			Help: "Table maintenances that failed (retried on the next pass)."}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_iceberg_tables_dropped_total",
			Help: "Tables of deleted topics dropped (iceberg.drop_deleted_topics)."}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.rows, m.files, m.bytes, m.lagRecords, m.lagBytes, m.lagSeconds, m.rejectedRows,
		m.expired, m.rewritten, m.orphans, m.expiredFiles, m.failures, m.dropped} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("compactor: register iceberg metrics: %w", err)
		}
	}
	return m, nil
}

// forgetTables drops what this compactor keeps of the tables whose
// topics are not in live: their metric series, their failed maintenance.
func (c *Compactor) forgetTables(live map[string]bool) {
	c.im.forget(live, c.tablesSeen)
	for topic := range c.maintainFailed {
		if !live[topic] {
			delete(c.maintainFailed, topic)
		}
	}
}

// enabledTopics returns the names of the topics whose table is on.
func enabledTopics(topics []metadata.Topic) map[string]bool {
	on := make(map[string]bool, len(topics))
	for _, t := range topics {
		if ic, err := metadata.ParseIceberg(t.Config); err == nil && ic.Enabled {
			on[t.Name] = true
		}
	}
	return on
}

// forget removes the series of the tables whose topics are not in live
// (deleted, or their table turned off): those of the topic's table
// (tables: topic to namespace.table) and of its rejected table.
func (m *icebergMetrics) forget(live map[string]bool, tables map[string]string) {
	for topic, tbl := range tables {
		if live[topic] {
			continue
		}
		rejected := rejectedLabel(topic, tbl)
		for _, g := range []*prometheus.GaugeVec{m.rows, m.files, m.bytes, m.lagRecords, m.lagBytes, m.lagSeconds} {
			g.DeleteLabelValues(topic, tbl)
		}
		m.rejectedRows.DeleteLabelValues(topic, rejected)
		for _, c := range []*prometheus.CounterVec{m.expired, m.rewritten, m.orphans, m.expiredFiles} {
			c.DeleteLabelValues(topic, tbl)
			c.DeleteLabelValues(topic, rejected)
		}
		delete(tables, topic)
	}
}

// rejectedLabel is the table label (namespace.table) of topic's rejected
// table, whose table's label is tbl.
func rejectedLabel(topic, tbl string) string {
	ns, _, _ := strings.Cut(tbl, ".")
	return ns + "." + iceberg.RejectedTableName(topic)
}

// recordIceberg ends a visit of t's table whose append left watermark wm
// (snap: the snapshot it committed, 0 for none): it maintains the table
// when due, then records the table's figures in the lease cursor and the
// metrics. Maintenance failures are logged and counted (retried on the
// next pass); the cursor is written regardless.
func (c *Compactor) recordIceberg(ctx context.Context, t metadata.Topic, ic metadata.Iceberg, lease string, wm iceberg.Watermark, snap int64) error {
	w := c.cfg.Iceberg
	oldText, err := c.meta.JobCursor(ctx, lease)
	if err != nil {
		return err
	}
	old, ok := metadata.ReadIcebergCursor(oldText)
	if !ok || old.TopicID != t.ID {
		old = metadata.IcebergCursor{}
	}
	cur := old
	cur.TopicID, cur.Watermark = t.ID, wm
	name := w.Identifier(t.Name)
	cur.Table = name[0] + "." + name[1]
	now, err := c.meta.Now(ctx)
	if err != nil {
		return err
	}
	describe := snap != 0 || !old.HasTotals
	interval := c.cfg.IcebergMaintain.Interval
	if maintainDue(old.MaintainedMs, now.UnixMilli(), interval) && retryDue(c.maintainFailed[t.Name], time.Now(), interval) {
		if err := c.maintainTable(ctx, t, ic, lease, now); err != nil {
			if errors.Is(err, errLeaseLost) || ctx.Err() != nil {
				return err
			}
			c.maintainFailed[t.Name] = time.Now()
			c.im.failures.Inc()
			c.log.Warn("iceberg: table maintenance failed; retried later", "topic", t.Name, "err", err)
		} else {
			delete(c.maintainFailed, t.Name)
			cur.MaintainedMs = now.UnixMilli()
		}
		describe = true
	}
	if describe {
		st, err := w.Describe(ctx, t.Name)
		if err != nil {
			return fmt.Errorf("describe table: %w", err)
		}
		cur.HasTotals, cur.Rows, cur.DataFiles, cur.DataBytes = true, st.Rows, st.DataFiles, st.Bytes
		if st.SnapshotID != 0 {
			cur.SnapshotID, cur.SnapshotMs = st.SnapshotID, st.SnapshotTime.UnixMilli()
		}
		// The rejected table changes only with an append to the table
		// (icebergTyped appends to it first) or a maintenance.
		rj, err := w.DescribeRejected(ctx, t.Name)
		if err != nil {
			return fmt.Errorf("describe rejected table: %w", err)
		}
		cur.HasRejected, cur.RejectedRows, cur.RejectedDataFiles, cur.RejectedDataBytes = rj.Exists, rj.Rows, rj.DataFiles, rj.Bytes
	}
	held, err := c.meta.SetJobCursor(ctx, lease, c.cfg.Owner, cur.String())
	if err != nil {
		return err
	}
	if !held {
		return fmt.Errorf("%w: %s", errLeaseLost, lease)
	}
	c.exportTable(ctx, t, cur, now)
	return nil
}

// exportTable sets t's table gauges from cur and from how far the table
// trails the log (errors reading the log leave the lag gauges as they
// were).
func (c *Compactor) exportTable(ctx context.Context, t metadata.Topic, cur metadata.IcebergCursor, now time.Time) {
	name := c.cfg.Iceberg.Identifier(t.Name)
	tbl := name[0] + "." + name[1]
	c.tablesSeen[t.Name] = tbl
	c.im.rows.WithLabelValues(t.Name, tbl).Set(float64(cur.Rows))
	c.im.files.WithLabelValues(t.Name, tbl).Set(float64(cur.DataFiles))
	c.im.bytes.WithLabelValues(t.Name, tbl).Set(float64(cur.DataBytes))
	if cur.HasRejected {
		c.im.rejectedRows.WithLabelValues(t.Name, rejectedLabel(t.Name, tbl)).Set(float64(cur.RejectedRows))
	} else {
		c.im.rejectedRows.DeleteLabelValues(t.Name, rejectedLabel(t.Name, tbl)) // none (any more: renamed away)
	}
	states, err := c.meta.PartitionStates(ctx, t.ID)
	if err != nil {
		return
	}
	var records, bytes, ageMs int64
	for _, st := range states {
		var refs []metadata.BatchRef
		if start := max(st.LogStartOffset, cur.Watermark[st.Partition]); start < st.HighWatermark {
			if refs, _, err = c.meta.FindBatches(ctx, t.ID, st.Partition, start, metadata.IcebergLagBytesCap); err != nil {
				refs = nil // retention moved meanwhile: records only
			}
		}
		r, b, a := metadata.IcebergLag(st.LogStartOffset, st.HighWatermark, cur.Watermark[st.Partition], refs, now.UnixMilli())
		records, bytes, ageMs = records+r, bytes+b, max(ageMs, a)
	}
	c.im.lagRecords.WithLabelValues(t.Name, tbl).Set(float64(records))
	c.im.lagBytes.WithLabelValues(t.Name, tbl).Set(float64(bytes))
	c.im.lagSeconds.WithLabelValues(t.Name, tbl).Set(float64(ageMs) / 1000)
}

// maintainTable runs the maintenance steps on t's table, then on its
// rejected table (when it has one), renewing the lease between them.
func (c *Compactor) maintainTable(ctx context.Context, t metadata.Topic, ic metadata.Iceberg, lease string, now time.Time) error {
	w := c.cfg.Iceberg
	name := w.Identifier(t.Name)
	if err := c.maintainOne(ctx, t, ic, lease, now, tableSteps{name: name, expire: w.ExpireDays,
		rewrite: w.RewriteSmallFiles, retired: w.RetiredTables, maintain: w.Maintain}); err != nil {
		return err
	}
	if err := c.renew(ctx, lease); err != nil {
		return err
	}
	// The rejected table, when the topic has one: its own location, shared
	// only with its retired predecessors (iceberg/rejected.go).
	rejected := w.RejectedIdentifier(t.Name)
	exists, err := w.Catalog().CheckTableExists(ctx, rejected)
	if err != nil {
		return fmt.Errorf("look up the rejected table: %w", err)
	}
	if !exists {
		return nil
	}
	if err := c.maintainOne(ctx, t, ic, lease, now, tableSteps{name: rejected, expire: w.ExpireRejectedDays,
		rewrite: w.RewriteRejectedSmallFiles, retired: w.RetiredRejectedTables, maintain: w.MaintainRejected}); err != nil {
		return fmt.Errorf("rejected table: %w", err)
	}
	return nil
}

// tableSteps are the maintenance steps of one of a topic's tables (its
// table or its rejected table).
type tableSteps struct {
	name     table.Identifier
	expire   func(ctx context.Context, topic string, cutoff time.Time) (int, int64, error)
	rewrite  func(ctx context.Context, topic string, opts iceberg.RewriteOptions) (iceberg.RewriteResult, error)
	retired  func(ctx context.Context, topic string) ([]table.Identifier, error)
	maintain func(ctx context.Context, topic string, opts iceberg.MaintainOptions) (iceberg.MaintainResult, error)
}

// maintainOne runs the maintenance steps of one of t's tables.
func (c *Compactor) maintainOne(ctx context.Context, t metadata.Topic, ic metadata.Iceberg, lease string, now time.Time, s tableSteps) error {
	mc := c.cfg.IcebergMaintain
	labels := []string{t.Name, s.name[0] + "." + s.name[1]}
	started := time.Now()
	var res iceberg.MaintainResult
	if cutoff := expireBefore(ic.Retention, now); !cutoff.IsZero() {
		n, rows, err := s.expire(ctx, t.Name, cutoff)
		if err != nil {
			return fmt.Errorf("table retention: %w", err)
		}
		res.ExpiredFiles, res.ExpiredRows = n, rows
		c.im.expiredFiles.WithLabelValues(labels...).Add(float64(n))
		if err := c.renew(ctx, lease); err != nil {
			return err
		}
	}
	if mc.RewriteMinFiles > 0 {
		rw, err := s.rewrite(ctx, t.Name, iceberg.RewriteOptions{MinFiles: mc.RewriteMinFiles, MaxBytes: mc.RewriteMaxBytes})
		if err != nil {
			return fmt.Errorf("rewrite small files: %w", err)
		}
		res.Rewrite = rw
		c.im.rewritten.WithLabelValues(labels...).Add(float64(rw.FilesRemoved))
		if err := c.renew(ctx, lease); err != nil {
			return err
		}
	}
	orphanAge := mc.OrphanAge
	if orphanAge > 0 {
		// A deleted topic's table renamed out of this one's way shares its
		// location: its files would look orphaned. Orphans wait until it
		// is dropped (DropDeletedTopics, or by hand).
		retired, err := s.retired(ctx, t.Name)
		if err != nil {
			return err
		}
		if len(retired) > 0 {
			orphanAge = 0
			c.log.Info("iceberg: orphan files not deleted: a deleted topic's table shares the location", "topic", t.Name,
				"table", labels[1], "tables", retired)
		}
	}
	m, err := s.maintain(ctx, t.Name, iceberg.MaintainOptions{KeepSnapshots: mc.KeepSnapshots,
		MaxSnapshotAge: mc.SnapshotAge, OrphanAge: orphanAge, KeepSuperseded: mc.OrphanAge})
	c.im.expired.WithLabelValues(labels...).Add(float64(m.ExpiredSnapshots))
	c.im.orphans.WithLabelValues(labels...).Add(float64(m.OrphanFiles))
	if err != nil {
		return err
	}
	c.log.Info("table maintained", "topic", t.Name, "table", labels[1], "expired_days_files", res.ExpiredFiles, "expired_rows", res.ExpiredRows,
		"rewritten_files", res.Rewrite.FilesRemoved, "into", res.Rewrite.FilesAdded, "expired_snapshots", m.ExpiredSnapshots,
		"orphan_files", m.OrphanFiles, "took", time.Since(started))
	return nil
}

// dropDeletedTables drops the tables of deleted topics, under the lease
// JobIcebergDrop, at most every maintenance interval. A table is dropped
// by identity (dropTable): the tables are listed, and for each topic
// named by a candidate's floe.topic the decision is made again under
// the lease of that topic's table (the one its appends and renames hold,
// metadata.IcebergLease), from the topics and the lease's cursor read
// while it is held, so that a topic re-created meanwhile, whose new table
// another compactor created at the same name, keeps it.
func (c *Compactor) dropDeletedTables(ctx context.Context) error {
	mc := c.cfg.IcebergMaintain
	if !mc.DropDeletedTopics || mc.Interval <= 0 {
		return nil
	}
	held, err := c.hold(ctx, JobIcebergDrop)
	if err != nil || !held {
		return err
	}
	defer c.releaseLease(ctx, JobIcebergDrop)
	cur, err := c.meta.JobCursor(ctx, JobIcebergDrop)
	if err != nil {
		return err
	}
	now, err := c.meta.Now(ctx)
	if err != nil {
		return err
	}
	var last int64
	_, _ = fmt.Sscan(cur, &last)
	if !maintainDue(last, now.UnixMilli(), mc.Interval) {
		return nil
	}
	tables, err := c.cfg.Iceberg.Tables(ctx)
	if err != nil {
		return err
	}
	topics, err := c.meta.ListTopics(ctx)
	if err != nil {
		return err
	}
	// Candidates by the state listed now, by topic; decided again under
	// each topic's table lease.
	live := newLiveTopics(topics)
	byTopic := map[string][]iceberg.TableRef{}
	var order []string
	for _, tr := range tables {
		if tr.Topic == "" {
			continue
		}
		cursorID, err := c.tableCursorID(ctx, tr.Topic)
		if err != nil {
			return err
		}
		if dropTable(tr, cursorID, live) {
			if byTopic[tr.Topic] == nil {
				order = append(order, tr.Topic)
			}
			byTopic[tr.Topic] = append(byTopic[tr.Topic], tr)
		}
	}
	var errs []error
	for _, topic := range order {
		if err := c.renew(ctx, JobIcebergDrop); err != nil {
			return err
		}
		if err := c.dropTopicTables(ctx, topic, byTopic[topic]); err != nil {
			if errors.Is(err, errLeaseLost) {
				return err
			}
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if _, err := c.meta.SetJobCursor(ctx, JobIcebergDrop, c.cfg.Owner, fmt.Sprint(now.UnixMilli())); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// dropTopicTables drops, of the candidate tables whose floe.topic is
// topic, those dropTable still picks under the lease of topic's table;
// a lease another compactor holds leaves them to a later pass.
func (c *Compactor) dropTopicTables(ctx context.Context, topic string, cands []iceberg.TableRef) error {
	lease := metadata.IcebergLease(topic)
	held, err := c.hold(ctx, lease)
	if err != nil || !held {
		return err
	}
	defer c.releaseLease(ctx, lease)
	topics, err := c.meta.ListTopics(ctx)
	if err != nil {
		return err
	}
	cursorID, err := c.tableCursorID(ctx, topic)
	if err != nil {
		return err
	}
	live := newLiveTopics(topics)
	var errs []error
	for _, tr := range cands {
		if !dropTable(tr, cursorID, live) {
			continue
		}
		if err := c.renew(ctx, lease); err != nil {
			return err
		}
		if err := c.cfg.Iceberg.DropTable(ctx, tr.Identifier); err != nil {
			errs = append(errs, err)
			continue
		}
		c.im.dropped.Inc()
		c.log.Warn("table of a deleted topic dropped", "table", tr.Identifier, "topic", tr.Topic, "topic_id", cursorID)
	}
	return errors.Join(errs...)
}

// tableCursorID is the topic id the lease cursor of topic's table names
// (0: none).
func (c *Compactor) tableCursorID(ctx context.Context, topic string) (int64, error) {
	cur, err := c.meta.JobCursor(ctx, metadata.IcebergLease(topic))
	if err != nil {
		return 0, err
	}
	id, _ := metadata.IcebergCursorTopic(cur)
	return id, nil
}

// releaseLease gives up a lease at the end of a step, even when ctx ended.
func (c *Compactor) releaseLease(ctx context.Context, lease string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := c.meta.ReleaseLease(rctx, lease, c.cfg.Owner); err != nil {
		c.log.Debug("release lease", "job", lease, "err", err)
	}
}
