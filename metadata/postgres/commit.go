package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/internal/validate"
)

// commitSQL calls the commit function of this release
// (migrations/0003_commit_file_v2.sql).
const commitSQL = `SELECT o_base, o_dup, o_err, o_append_time, o_replay, o_notice
	FROM floe_commit_file_v2($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`

// CommitFile records f and sequences its batches with one call of
// floe_commit_file_v2: one round trip, one implicit transaction. A key
// already committed answers with the results stored by its first commit.
// (A commit of a committed key with another number of batches is a
// caller's mistake: ErrInvalidCommit, and nothing written.)
//
// Errors: ErrNotApplied wraps a failure before the statement could reach
// PostgreSQL (no connection from the pool, connection refused, nothing
// sent) or an ERROR the server answered it with (the implicit transaction
// rolled back); any other failure is ambiguous.
func (s *Store) CommitFile(ctx context.Context, f metadata.FileCommit) ([]metadata.BatchResult, error) {
	if err := validate.Commit(f); err != nil {
		return nil, err
	}
	if s.isClosed() {
		return nil, fmt.Errorf("metadata: commit file %s: %w", f.Key, metadata.ErrClosed)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil { // nothing was sent
		return nil, s.notApplied("commit file "+f.Key, err)
	}
	defer conn.Release()
	var row commitRow
	err = conn.QueryRow(ctx, commitSQL, s.commitArgs(f)...).Scan(row.dest()...)
	if err != nil {
		return nil, s.statementErr("commit file "+f.Key, err)
	}
	// Past this point the file is committed: errors say so and are never
	// ErrNotApplied.
	results, stored, err := row.results(f)
	s.announce(row.notice, f, results)
	if stored >= 0 {
		return nil, fmt.Errorf("%w: file %s was committed with %d batches, not %d", metadata.ErrInvalidCommit, f.Key, stored, len(f.Batches))
	}
	return results, err
}

// commitArgs are floe_commit_file_v2's arguments for f.
func (s *Store) commitArgs(f metadata.FileCommit) []any {
	n := len(f.Batches)
	var (
		topic   = make([]int64, n)
		part    = make([]int32, n)
		byteOff = make([]int64, n)
		byteLen = make([]int64, n)
		count   = make([]int32, n)
		maxTS   = make([]int64, n)
		pid     = make([]int64, n)
		epoch   = make([]int16, n)
		seq     = make([]int32, n)
	)
	idempotent := false
	for i, b := range f.Batches {
		topic[i], part[i], byteOff[i], byteLen[i] = b.TopicID, b.Partition, b.ByteOffset, b.ByteLength
		count[i], maxTS[i] = b.RecordCount, b.MaxTimestamp
		pid[i], epoch[i], seq[i] = -1, -1, metadata.NoSequence
		if validate.Idempotent(b) {
			pid[i], epoch[i], seq[i] = b.ProducerID, b.ProducerEpoch, b.BaseSequence
			idempotent = true
		}
	}
	if !idempotent { // NULL arrays: less to send
		pid, epoch, seq = nil, nil, nil
	}
	var channel *string // NULL: the notifier announces the commit
	if s.opts.NotifyInCommit {
		channel = &s.opts.NotifyChannel
	}
	return []any{f.Key, f.Size, topic, part, byteOff, byteLen, count, maxTS, pid, epoch, seq, channel}
}

// commitRow is floe_commit_file_v2's answer.
type commitRow struct {
	base       []*int64
	dup        []*int64
	codes      []int16
	appendTime *int64
	replay     bool
	notice     *string
}

func (r *commitRow) dest() []any {
	return []any{&r.base, &r.dup, &r.codes, &r.appendTime, &r.replay, &r.notice}
}

// results turns the answer of a commit of f into its results. stored >= 0
// is the batch count of a replayed key that was committed with another
// number of batches (no results then).
func (r *commitRow) results(f metadata.FileCommit) (_ []metadata.BatchResult, stored int, _ error) {
	n := len(f.Batches)
	if r.appendTime == nil {
		if r.replay {
			return nil, -1, fmt.Errorf("metadata: commit file %s: %w", f.Key, errNoStoredResults)
		}
		return nil, -1, fmt.Errorf("metadata: commit file %s (committed): no append time", f.Key)
	}
	if r.replay && len(r.codes) != n {
		return nil, len(r.codes), nil
	}
	results, err := decodeResults(f.Key, n, r.base, r.dup, r.codes, *r.appendTime)
	return results, -1, err
}

// announce hands a commit's notice, and the batches of its results when
// known, to the notifier.
func (s *Store) announce(notice *string, f metadata.FileCommit, results []metadata.BatchResult) {
	if notice == nil || s.notifier == nil {
		return
	}
	var refs []metadata.BatchRef
	if results != nil {
		refs = refsOf(f, results)
	}
	s.notifier.add(*notice, refs...)
}

// errNoStoredResults: the file was committed by a release that did not
// store results.
var errNoStoredResults = errors.New("metadata: file committed earlier, without stored results (by a previous release)")

// decodeResults turns floe_commit_file_v2's arrays into results.
func decodeResults(key string, n int, base, dup []*int64, codes []int16, appendTime int64) ([]metadata.BatchResult, error) {
	if len(base) != n || len(codes) != n || (dup != nil && len(dup) != n) {
		return nil, fmt.Errorf("metadata: commit file %s (committed): %d, %d, %d results for %d batches", key, len(base), len(dup), len(codes), n)
	}
	results := make([]metadata.BatchResult, n)
	for i := range results {
		r := &results[i]
		r.BaseOffset, r.LogAppendTime = -1, appendTime
		code := codes[i]
		refusal, known := validate.RefusalError(code)
		switch {
		case !known:
			return nil, fmt.Errorf("metadata: commit file %s (committed): unknown refusal code %d", key, code)
		case refusal != nil:
			r.Err = refusal
		case dup != nil && dup[i] != nil:
			r.Duplicate, r.BaseOffset = true, *dup[i]
			if j := -*dup[i] - 1; j >= 0 { // a repeat of batch j of this file
				if j >= int64(i) || base[j] == nil {
					return nil, fmt.Errorf("metadata: commit file %s (committed): batch %d repeats batch %d, not committed before it", key, i, j)
				}
				r.BaseOffset = *base[j]
			}
		case base[i] == nil:
			return nil, fmt.Errorf("metadata: commit file %s (committed): batch %d has neither offset nor error", key, i)
		default:
			r.BaseOffset = *base[i]
		}
	}
	return results, nil
}

// notApplied wraps err, a failure that surely left the database unchanged,
// with ErrNotApplied (and ErrClosed once the store is closed).
func (s *Store) notApplied(op string, err error) error {
	if s.isClosed() {
		return fmt.Errorf("metadata: %s: %w: %w", op, metadata.ErrNotApplied, metadata.ErrClosed)
	}
	return fmt.Errorf("metadata: %s: %w: %w", op, metadata.ErrNotApplied, err)
}

// statementErr wraps the error of a write statement: ErrNotApplied when
// Definite says the statement surely did not take effect, else ambiguous.
func (s *Store) statementErr(op string, err error) error {
	if Definite(err) {
		return s.notApplied(op, err)
	}
	return fmt.Errorf("metadata: %s: outcome unknown: %w", op, err)
}

// Definite reports whether err, from a single-statement write (its own
// implicit transaction), proves that the statement took no effect:
//   - pgconn.SafeToRetry: the error came before anything was sent (the
//     context ended first, the connection was locked or closed);
//   - a connection that could not be made (pgconn.ConnectError, refused);
//   - an ERROR the server answered with: the transaction rolled back.
//
// A FATAL or PANIC from the server, a broken connection, a context that
// ended while waiting for the answer: the statement may have committed.
func Definite(err error) bool {
	if err == nil {
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		sev := pe.SeverityUnlocalized
		if sev == "" {
			sev = pe.Severity
		}
		return sev == "ERROR"
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
