// Package compactor runs floe's background storage jobs against the
// metadata store and the object store:
//
//   - retention: advances each partition's log start offset past the
//     batches older than retention.ms (by the metadata store's clock) or
//     beyond retention.bytes; removes the batch rows no reader can reach
//     (below the log start, or of deleted topics) in bounded transactions,
//     marking 'deleting' each file left without batches; sweeps files that
//     never had a batch.
//   - deletion: deletes the marked files from the object store once their
//     grace period (reads in flight finish) has passed, and removes their
//     rows only once the store confirmed the delete; failures are retried
//     on the next pass.
//   - orphans: lists the object store incrementally, one page of one key
//     shard per pass with a cursor kept in the metadata, and deletes
//     objects the metadata does not know once they are older than the
//     grace period plus the agents' upload and commit deadlines (see
//     orphanDue).
//
// Several compactors may run (the `floe compactor` process, replicated, or
// inside `floe dev`): each job is held by one of them at a time through a
// lease in the metadata store (the compactor_leases table, owner and
// expiry by the store's clock; on PostgreSQL a row rather than an
// advisory lock, so that it survives connection churn, needs no dedicated
// connection and carries the job's cursor). A holder renews its lease
// between bounded steps and stops a job whose lease it lost. A lease is not
// a fence: a holder paused past its expiry may overlap its successor for
// one step; every step is safe to run twice (each is a conditional
// statement), so that costs work, not correctness.
//
// The decisions are in decide.go, free of I/O; the jobs in jobs.go.
package compactor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

// Job names (the lease keys).
const (
	JobRetention = "retention"
	JobDeletion  = "deletion"
	JobOrphans   = "orphans"
	JobMerge     = "merge"
	JobCompact   = "compact" // keyed compaction (keyed.go)
)

// Jobs is every job, in the order a pass runs them.
var Jobs = []string{JobRetention, JobCompact, JobMerge, JobDeletion, JobOrphans}

// Config configures a Compactor.
type Config struct {
	// Owner names this compactor in leases; unique per process.
	Owner string
	// Interval between passes.
	Interval time.Duration
	// LeaseTTL is how long a lease lasts without renewal; longer than one
	// bounded step.
	LeaseTTL time.Duration
	// Grace is how long a dead file stays in the object store after it was
	// marked, so that reads in flight finish. It must exceed the agents'
	// batcher CommitTimeout (a retried commit of a file must not outlive it).
	Grace time.Duration
	// OrphanAge is how old an object the metadata does not know must be
	// before it is deleted: Grace plus the longest upload + commit deadline
	// of the agents' batchers (2 x 10 minutes at most).
	OrphanAge time.Duration
	// Prefix is where the batcher's files are: Prefix + "XX/" + name.
	Prefix string
	// BatchLimit bounds the rows of one metadata transaction (batches
	// collected, files swept).
	BatchLimit int
	// MaxSteps bounds the collection transactions of one retention pass.
	MaxSteps int
	// DeleteLimit bounds the files one deletion pass deletes;
	// DeleteConcurrency the object deletes in flight.
	DeleteLimit, DeleteConcurrency int
	// OrphanPage bounds the objects one orphan pass lists, OrphanShards
	// the key shards it lists (one LIST request or more each): a whole
	// cycle over the 256 shards takes 256/OrphanShards passes at least.
	OrphanPage, OrphanShards int
	// MergeSmallBytes: files smaller than this, created more than
	// MergeMinAge ago, are merged, up to MergeMaxFiles files and about
	// MergeTargetBytes of live batches per pass; 0 disables merging.
	MergeSmallBytes, MergeTargetBytes int64
	MergeMinAge                       time.Duration
	MergeMaxFiles                     int
	// CompactMaxBytes bounds the batches of one partition a keyed
	// compaction reads and rewrites at once (keyed.go); 0 disables keyed
	// compaction.
	CompactMaxBytes int64
	// CompactMinAge is the least min.compaction.lag.ms of every compacted
	// topic: batches younger than it are not compacted. Like MergeMinAge it
	// keeps rewrites away from the batches the agents' read indexes answer
	// with (appended in the last 2 minutes), which may point at the old
	// files however short Grace is.
	CompactMinAge time.Duration
	// TopicMetrics refreshes the per-topic storage gauges (one
	// TopicStorage query per topic, which sums the topic's batches) on a
	// retention pass at most every TopicMetricsInterval.
	TopicMetrics         bool
	TopicMetricsInterval time.Duration
	// Iceberg writes the topics' Iceberg tables (iceberg.go); nil turns
	// the job off, and retention then does not wait for the tables.
	Iceberg *iceberg.Writer
	// IcebergMaxBytes bounds the log's batch bytes one pass reads and
	// appends to one table, whatever its partition count (the partitions
	// past it wait for the next pass, which starts with them); the rows
	// built from them are held in memory until the append. A single batch
	// larger than it is appended alone.
	IcebergMaxBytes int64
	// IcebergMaintain configures table maintenance (maintain.go).
	IcebergMaintain IcebergMaintainConfig
	// Logger receives what the jobs do; nil discards.
	Logger *slog.Logger
	// Registerer receives the metrics; nil registers none.
	Registerer prometheus.Registerer
}

// DefaultConfig returns the defaults: a pass every 30 s, a 5 minute grace
// period, orphans deleted after 25 minutes.
func DefaultConfig() Config {
	return Config{
		Interval:             30 * time.Second,
		LeaseTTL:             2 * time.Minute,
		Grace:                5 * time.Minute,
		OrphanAge:            25 * time.Minute,
		Prefix:               "v1/files/",
		BatchLimit:           1000,
		MaxSteps:             100,
		DeleteLimit:          1000,
		DeleteConcurrency:    8,
		OrphanPage:           1000,
		OrphanShards:         16,
		MergeSmallBytes:      1 << 20,
		MergeTargetBytes:     32 << 20,
		MergeMinAge:          10 * time.Minute,
		MergeMaxFiles:        1000,
		CompactMaxBytes:      64 << 20,
		CompactMinAge:        10 * time.Minute,
		TopicMetrics:         true,
		TopicMetricsInterval: 5 * time.Minute,
		IcebergMaxBytes:      64 << 20,
		IcebergMaintain:      DefaultIcebergMaintainConfig(),
	}
}

func (c Config) validate() error {
	switch {
	case c.Owner == "":
		return errors.New("compactor: config Owner is empty")
	case c.Interval <= 0 || c.LeaseTTL <= 0:
		return fmt.Errorf("compactor: config Interval %v and LeaseTTL %v must be positive", c.Interval, c.LeaseTTL)
	case c.Grace < 0:
		return fmt.Errorf("compactor: config Grace %v is negative", c.Grace)
	case c.MergeSmallBytes > 0 && (c.MergeTargetBytes < c.MergeSmallBytes || c.MergeMaxFiles < 2 || c.MergeMinAge < 0):
		return fmt.Errorf("compactor: config merge: MergeTargetBytes %d must be >= MergeSmallBytes %d, MergeMaxFiles %d >= 2, MergeMinAge %v >= 0",
			c.MergeTargetBytes, c.MergeSmallBytes, c.MergeMaxFiles, c.MergeMinAge)
	case c.MergeSmallBytes > 0 && mergeDeadline(c.OrphanAge, c.Grace) < time.Second:
		return fmt.Errorf("compactor: config OrphanAge %v must exceed Grace %v by 2s at least when merging (merges finish within half the difference)",
			c.OrphanAge, c.Grace)
	case c.Iceberg != nil && c.IcebergMaxBytes < 1:
		return fmt.Errorf("compactor: config IcebergMaxBytes %d must be >= 1", c.IcebergMaxBytes)
	case c.Iceberg != nil && c.IcebergMaintain.validate() != nil:
		return c.IcebergMaintain.validate()
	case c.CompactMinAge < 0:
		return fmt.Errorf("compactor: config CompactMinAge %v is negative", c.CompactMinAge)
	case c.CompactMaxBytes > 0 && mergeDeadline(c.OrphanAge, c.Grace) < time.Second:
		return fmt.Errorf("compactor: config OrphanAge %v must exceed Grace %v by 2s at least when compacting (compactions finish within half the difference)",
			c.OrphanAge, c.Grace)
	case c.OrphanAge < c.Grace:
		return fmt.Errorf("compactor: config OrphanAge %v is shorter than Grace %v", c.OrphanAge, c.Grace)
	case c.BatchLimit < 1 || c.MaxSteps < 1 || c.DeleteLimit < 1 || c.DeleteConcurrency < 1 || c.OrphanPage < 1 ||
		c.OrphanShards < 1:
		return fmt.Errorf("compactor: config limits must be >= 1 (BatchLimit %d, MaxSteps %d, DeleteLimit %d, DeleteConcurrency %d, OrphanPage %d)",
			c.BatchLimit, c.MaxSteps, c.DeleteLimit, c.DeleteConcurrency, c.OrphanPage)
	}
	return nil
}

// DefaultOwner names this process: host, pid and start time.
func DefaultOwner() string {
	h, _ := os.Hostname()
	return h + "-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// Compactor runs the jobs. Run loops; RunOnce makes one pass.
type Compactor struct {
	meta  metadata.Store
	store objectstore.Store
	cfg   Config
	log   *slog.Logger
	m     *metrics
	im    *icebergMetrics // per-table figures and maintenance (maintain.go)

	passMu     sync.Mutex               // serialises passes (Run and RunOnce callers) and protects topicsSeen
	topicsSeen time.Time                // when the per-topic gauges were last refreshed
	keyed      map[partKey]keyedState   // what the last keyed compaction pass saw; protected by passMu
	retained   map[int64]topicRetention // topic id -> what the last retention pass learnt; protected by passMu
	tablesSeen map[string]string        // topic -> table of the per-table gauges set; protected by passMu
	// maintainFailed: topic -> when its table's maintenance last failed
	// (maintain.go); protected by passMu.
	maintainFailed map[string]time.Time
	// icebergNext: topic id -> the index of the partition its table's
	// next append starts at (where the last one ran out of
	// IcebergMaxBytes); protected by passMu.
	icebergNext map[int64]int
}

// New returns a compactor of meta's files in store (the batcher's store,
// with the same prefix wrapper).
func New(meta metadata.Store, store objectstore.Store, cfg Config) (*Compactor, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	im, err := newIcebergMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &Compactor{meta: meta, store: store, cfg: cfg, log: cfg.Logger.With("owner", cfg.Owner), m: m, im: im,
		tablesSeen: map[string]string{}, maintainFailed: map[string]time.Time{},
		icebergNext: map[int64]int{}}, nil
}

// Report is what one pass did.
type Report struct {
	NotHeld      []string // jobs another compactor held
	Advanced     int      // partitions whose log start moved
	Batches      int      // batch rows collected
	FilesMarked  int
	FilesMerged  int // small files whose batches moved to a merged file
	BatchesMoved int
	// Keyed compaction: batch rows rewritten, records removed.
	BatchesCompacted, RecordsRemoved int
	FilesDeleted                     int
	BytesDeleted                     int64
	DeleteFailures                   int
	ObjectsListed                    int
	OrphansFound                     int
	OrphansDeleted                   int
	OrphanCursor                     string // where the next orphan pass starts
	// Iceberg: table appends committed, rows they wrote.
	IcebergAppends, IcebergRows int
	// IcebergBehind is the tables whose append IcebergMaxBytes cut short:
	// their log holds more batches old enough for the table.
	IcebergBehind int
}

// Run makes a pass every Interval until ctx ends, then gives up its
// leases. Job errors are logged and retried on the next pass. Between
// passes, a table that its pass's IcebergMaxBytes left behind gets its
// next appends at once (icebergOnce), one after another until every
// table has caught up or the next pass is due: a log written faster than
// IcebergMaxBytes per Interval still reaches its table (and its raw
// files, with retention.raw.ms, can age out), each append as bounded as
// before.
func (c *Compactor) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	defer c.release()
	r, full := Report{}, true
	for {
		var err error
		if full {
			r, err = c.RunOnce(ctx)
		} else {
			r, err = c.icebergOnce(ctx)
		}
		if err != nil && ctx.Err() == nil {
			c.log.Warn("compactor pass failed", "err", err, "iceberg_only", !full)
		}
		full = false
		if r.IcebergBehind > 0 {
			// A table is behind: its next append now, unless the next full
			// pass is due.
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				full = true
			default:
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			full = true
		}
	}
}

// icebergOnce is the Iceberg job of a pass alone (RunOnce's first).
func (c *Compactor) icebergOnce(ctx context.Context) (Report, error) {
	c.passMu.Lock()
	defer c.passMu.Unlock()
	var r Report
	if err := c.icebergPass(ctx, &r); err != nil {
		return r, fmt.Errorf("compactor: iceberg job: %w", err)
	}
	return r, nil
}

// release gives up this compactor's leases so that another takes over at
// once.
func (c *Compactor) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, j := range Jobs {
		if err := c.meta.ReleaseLease(ctx, j, c.cfg.Owner); err != nil {
			c.log.Debug("release lease", "job", j, "err", err)
		}
	}
}

// RunOnce runs one pass of each job whose lease it gets.
func (c *Compactor) RunOnce(ctx context.Context) (Report, error) {
	c.passMu.Lock()
	defer c.passMu.Unlock()
	var (
		r    Report
		errs []error
	)
	if c.cfg.Iceberg != nil {
		// Before retention, which then sees the tables' new watermarks.
		if err := c.icebergPass(ctx, &r); err != nil {
			errs = append(errs, fmt.Errorf("compactor: iceberg job: %w", err))
		}
	}
	for _, job := range Jobs {
		held, err := c.hold(ctx, job)
		if err != nil {
			errs = append(errs, err)
			c.m.passes.WithLabelValues(job, "error").Inc()
			continue
		}
		if !held {
			r.NotHeld = append(r.NotHeld, job)
			c.m.passes.WithLabelValues(job, "not_held").Inc()
			continue
		}
		switch job {
		case JobRetention:
			err = c.retentionPass(ctx, &r)
		case JobCompact:
			err = c.compactPass(ctx, &r)
		case JobMerge:
			err = c.mergePass(ctx, &r)
		case JobDeletion:
			err = c.deletionPass(ctx, &r)
		case JobOrphans:
			err = c.orphanPass(ctx, &r)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("compactor: %s job: %w", job, err))
			c.m.passes.WithLabelValues(job, "error").Inc()
		} else {
			c.m.passes.WithLabelValues(job, "ok").Inc()
		}
	}
	if err := c.refreshQueue(ctx); err != nil {
		errs = append(errs, err)
	}
	return r, errors.Join(errs...)
}

// errLeaseLost stops a job whose lease another compactor took.
var errLeaseLost = errors.New("compactor: lease lost")

// hold takes or renews the job's lease.
func (c *Compactor) hold(ctx context.Context, job string) (bool, error) {
	ok, err := c.meta.AcquireLease(ctx, job, c.cfg.Owner, c.cfg.LeaseTTL)
	if err != nil {
		return false, fmt.Errorf("compactor: lease %s: %w", job, err)
	}
	return ok, nil
}

// renew renews the job's lease between steps; errLeaseLost if gone.
func (c *Compactor) renew(ctx context.Context, job string) error {
	ok, err := c.hold(ctx, job)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s", errLeaseLost, job)
	}
	return nil
}

// refreshQueue updates the deletion queue gauges.
func (c *Compactor) refreshQueue(ctx context.Context) error {
	q, err := c.meta.DeletionQueue(ctx)
	if err != nil {
		return fmt.Errorf("compactor: deletion queue: %w", err)
	}
	c.m.queueFiles.Set(float64(q.Files))
	c.m.queueBytes.Set(float64(q.Bytes))
	age := 0.0
	if !q.Oldest.IsZero() {
		if now, err := c.meta.Now(ctx); err == nil {
			age = max(0, now.Sub(q.Oldest).Seconds())
		}
	}
	c.m.queueOldest.Set(age)
	return nil
}
