package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/logfile"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
	"github.com/floe-broker/floe/readpath"
)

// errBudgetSpent stops the walk over a run's Kafka batches once a read's
// byte budget is spent.
var errBudgetSpent = errors.New("agent: fetch budget spent")

// maxCoalesceGap merges two byte ranges of one file into one GET when the
// gap between them is at most this.
const maxCoalesceGap = 1 << 20

// readRange finds the committed runs of a partition from offset, about
// maxBytes of them (at least one when any exists), and returns them with
// their bytes (raw[i] holds refs[i]'s Kafka batches back to back, as
// stored) and the partition's state. verified[i] reports that raw[i] comes
// from a whole file whose checksums held when it was read (its body CRC-32C
// covers the batches: their own CRCs need no second check); bytes of a
// ranged read, or of a file cached unchecked, are not. It is the one way
// fetch, subscribe and the batch data plane read the log. The bytes of
// cached files are pinned (readpath.Cache.Get; batches of a mapped file
// are copied out instead: holds.keepOut): readRangeHeld is the read
// that holds them instead, for answers that reference them until sent.
// Below the raw log start, the topic's table serves (readTable, table.go).
func (a *Agent) readRange(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int) (refs []metadata.BatchRef, raw [][]byte, verified []bool, st metadata.PartitionState, err error) {
	return a.readRangeHeld(ctx, nil, topicID, partition, offset, maxBytes)
}

// readRangeHeld is readRange whose cached files' buffers are held in h
// (nil: pinned); the caller releases h once it no longer reads raw, also
// when it fails.
func (a *Agent) readRangeHeld(ctx context.Context, h *holds, topicID int64, partition int32, offset int64, maxBytes int) (refs []metadata.BatchRef, raw [][]byte, verified []bool, st metadata.PartitionState, err error) {
	return a.readRangeTurn(ctx, h, topicID, partition, offset, maxBytes, 0)
}

// readRangeTurn is readRangeHeld on its turn-th move between table and raw
// log.
func (a *Agent) readRangeTurn(ctx context.Context, h *holds, topicID int64, partition int32, offset int64, maxBytes int, turn int) (refs []metadata.BatchRef, raw [][]byte, verified []bool, st metadata.PartitionState, err error) {
	refs, st, err = a.findBatches(ctx, topicID, partition, offset, int64(maxBytes))
	if oor := (*metadata.OffsetOutOfRangeError)(nil); errors.As(err, &oor) && offset < oor.LogStartOffset {
		return a.readTable(ctx, h, topicID, partition, offset, maxBytes, oor, turn)
	}
	if err != nil || len(refs) == 0 {
		return nil, nil, nil, st, err
	}
	if a.loads.Readahead().Behind(refs, st.HighWatermark) {
		raw, verified, err = a.readBehind(ctx, h, readpath.Key{Topic: topicID, Part: partition}, refs, st.HighWatermark, maxBytes)
	} else {
		raw, verified, err = a.readBatches(ctx, h, refs, 0)
	}
	if err != nil {
		return nil, nil, nil, st, err
	}
	return refs, raw, verified, st, nil
}

// readBehind reads refs for a reader far behind the head: from its
// partition's read-ahead (readpath/readahead.go), which it extends, and by ranges
// for the rest — a file is loaded whole (and cached) only when the
// reader's batches are most of it.
func (a *Agent) readBehind(ctx context.Context, h *holds, k readpath.Key, refs []metadata.BatchRef, hw int64, maxBytes int) ([][]byte, []bool, error) {
	ra := a.loads.Readahead()
	if ra == nil {
		return a.readBatches(ctx, h, refs, 1)
	}
	out := make([][]byte, len(refs))
	ver := make([]bool, len(refs)) // segments are ranged reads: unverified
	miss, err := ra.Serve(ctx, k, refs, out, hw, maxBytes, a.findBatches)
	if err != nil || len(miss) == 0 {
		return out, ver, err
	}
	rest := make([]metadata.BatchRef, len(miss))
	for j, i := range miss {
		rest[j] = refs[i]
	}
	raw, rver, err := a.readBatches(ctx, h, rest, ra.Readers(k.Topic))
	if err != nil {
		return nil, nil, err
	}
	for j, i := range miss {
		out[i], ver[i] = raw[j], rver[j]
	}
	return out, ver, nil
}

// readBatches returns the bytes of each ref, in order: from the cache, by
// loading small files whole (and caching them), or by coalesced range GETs.
// A reader far behind the head, one of readers (> 0) catch-up readers of
// its topic, loads a file whole only when they likely want a quarter of it
// (wholeFile).
func (a *Agent) readBatches(ctx context.Context, h *holds, refs []metadata.BatchRef, readers int) ([][]byte, []bool, error) {
	out := make([][]byte, len(refs))
	ver := make([]bool, len(refs))
	byFile := make(map[string][]int)
	var files []string
	for i, r := range refs {
		if _, ok := byFile[r.FileKey]; !ok {
			files = append(files, r.FileKey)
		}
		byFile[r.FileKey] = append(byFile[r.FileKey], i)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, key := range files {
		idx := byFile[key]
		g.Go(func() error { return a.readFile(gctx, h, key, refs, idx, out, ver, readers) })
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return out, ver, nil
}

// wholeFile reports whether a read of the batches idx of refs, all in one
// file, loads the file whole: a file up to CacheFileMaxBytes when the
// cache is on; for a reader far behind the head, one of readers (> 0)
// catch-up readers of its topic, only when together they likely want a quarter
// of it (each partition holding about as much as this one: denseFile).
func wholeFile(refs []metadata.BatchRef, idx []int, cacheFileMax int64, cacheOn bool, readers int) bool {
	size := refs[idx[0]].FileSize
	if size <= 0 || size > cacheFileMax || !cacheOn {
		return false
	}
	if readers <= 0 {
		return true
	}
	var n int64
	for _, i := range idx {
		n += refs[i].ByteLength
	}
	return readpath.DenseFile(n, size, readers, cacheFileMax)
}

// readFile reads the batches idx of refs, all in file key, into out; ver
// gets whether each came from a whole file verified when read.
func (a *Agent) readFile(ctx context.Context, h *holds, key string, refs []metadata.BatchRef, idx []int, out [][]byte, ver []bool, readers int) error {
	if h == nil {
		// A read without holds: hold while reading, then keep what was read.
		tmp := &holds{}
		err := a.readFile(ctx, tmp, key, refs, idx, out, ver, readers)
		tmp.keepOut(out, idx)
		return err
	}
	data, verified, ok := h.cached(a.cache, key)
	if ok {
		a.m.cacheHit()
	} else if wholeFile(refs, idx, a.cfg.CacheFileMaxBytes, a.cfg.CacheBytes > 0, readers) || readers > 0 && a.loads.Loading(key) {
		a.m.cacheMiss()
		size := refs[idx[0]].FileSize
		// The load is shared by every reader of the file and bounded with
		// all other reads (loader).
		d, v, b, err := a.loads.FileHeld(ctx, key, size)
		if err != nil {
			return fmt.Errorf("agent: read file %s: %w", key, err)
		}
		data, verified, ok = h.adopt(b, d), v, true
	}
	if ok {
		// The footer must describe each run as the metadata does: an
		// object swapped for another (same size, checksums holding) would
		// otherwise serve that file's records.
		entries, err := logfile.Footer(data)
		if err != nil {
			return &dataLossError{Err: fmt.Errorf("agent: file %s: %w", key, err)}
		}
		for _, i := range idx {
			r := refs[i]
			if r.ByteOffset < 0 || r.ByteOffset+r.ByteLength > int64(len(data)) {
				return &dataLossError{Err: fmt.Errorf("agent: batch at %d+%d lies outside file %s of %d bytes", r.ByteOffset, r.ByteLength, key, len(data))}
			}
			if err := logfile.CheckRun(entries, logfile.Run{TopicID: r.TopicID, Partition: r.Partition, ByteOffset: r.ByteOffset,
				ByteLength: r.ByteLength, RecordCount: int64(r.RecordCount), MaxTimestamp: r.MaxTimestamp}); err != nil {
				return &dataLossError{Err: fmt.Errorf("agent: file %s: %w", key, err)}
			}
			out[i] = data[r.ByteOffset : r.ByteOffset+r.ByteLength]
			ver[i] = verified
		}
		return nil
	}
	a.m.cacheMiss()
	// Coalesced range reads.
	sorted := append([]int(nil), idx...)
	sort.Slice(sorted, func(x, y int) bool { return refs[sorted[x]].ByteOffset < refs[sorted[y]].ByteOffset })
	for start := 0; start < len(sorted); {
		lo := refs[sorted[start]].ByteOffset
		hi := lo + refs[sorted[start]].ByteLength
		end := start + 1
		for end < len(sorted) && refs[sorted[end]].ByteOffset <= hi+maxCoalesceGap {
			hi = max(hi, refs[sorted[end]].ByteOffset+refs[sorted[end]].ByteLength)
			end++
		}
		buf, err := a.loads.Range(ctx, key, lo, hi-lo)
		if errors.Is(err, objectstore.ErrInvalidRange) {
			// The object ends before the range starts: truncated.
			return &dataLossError{Err: fmt.Errorf("agent: read file %s [%d, %d): %w", key, lo, hi, err)}
		}
		if err != nil {
			return fmt.Errorf("agent: read file %s [%d, %d): %w", key, lo, hi, err)
		}
		for _, i := range sorted[start:end] {
			r := refs[i]
			s, e := r.ByteOffset-lo, r.ByteOffset-lo+r.ByteLength
			if e > int64(len(buf)) {
				return &dataLossError{Err: fmt.Errorf("agent: file %s is shorter than its batch at %d+%d", key, r.ByteOffset, r.ByteLength)}
			}
			out[i] = buf[s:e]
		}
		start = end
	}
	return nil
}

// recordWireSize is what a record adds to a FetchResponse or
// SubscribeResponse on the wire: its message, its length prefix and the
// field tag (records are field 1 and 2, one-byte tags). Counting this, not
// only key, value and headers, keeps responses of tiny records in budget.
func recordWireSize(r *floev1.Record) int {
	return protowire.SizeTag(2) + protowire.SizeBytes(proto.Size(r))
}

// responseOverhead bounds the bytes of a FetchResponse or SubscribeResponse
// besides its records (three int64 fields, or an int32 and an int64).
const responseOverhead = 3 * (1 + binary.MaxVarintLen64)

// readRecords returns records of a partition from offset whose wire size
// (recordWireSize) sums to at most maxBytes and that number at most the
// agent's MaxFetchRecords — but at least one record when any exists — with
// the partition's state and the next offset to read. In a compacted topic
// the next offset may pass offsets whose records are gone: a read that
// finds batches but no record from offset on reads again from there (at
// most maxEmptyReads times), so that a reader never waits at a gap.
func (a *Agent) readRecords(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int) ([]*floev1.Record, metadata.PartitionState, int64, error) {
	for i := 0; ; i++ {
		recs, st, next, err := a.readRecordsOnce(ctx, topicID, partition, offset, maxBytes)
		if err != nil || len(recs) > 0 || next <= offset || next >= st.HighWatermark || i+1 >= maxEmptyReads {
			return recs, st, next, err
		}
		offset = next
	}
}

// maxEmptyReads bounds the reads of one readRecords across compacted
// batches without records.
const maxEmptyReads = 8

// readRecordsOnce is one read of readRecords.
func (a *Agent) readRecordsOnce(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int) ([]*floev1.Record, metadata.PartitionState, int64, error) {
	maxRecords := a.cfg.MaxFetchRecords
	refs, raw, _, st, err := a.readRange(ctx, topicID, partition, offset, maxBytes)
	if err != nil || len(refs) == 0 {
		return nil, st, offset, err
	}
	var (
		recs  []*floev1.Record
		bytes int
		next  = offset
	)
	for i, r := range refs {
		// A committed run may hold several Kafka batches back to back; they
		// take consecutive offset ranges from the run's base offset. Each
		// Kafka batch spans LastOffsetDelta+1 offsets; in a compacted topic
		// it may hold fewer records (kbatch.DecodeStored), and whole batches
		// or runs may be gone (gaps).
		// Kafka batches wholly before next are skipped without decoding
		// (their header gives the span); decoding stops once the budget is
		// spent. Only a run read to its end can be checked against the
		// metadata's offsets and record count.
		base, full := r.BaseOffset, false
		var count int64
		err := kbatch.SplitStored(raw[i], func(batch []byte) error {
			if full {
				return errBudgetSpent
			}
			info, err := kbatch.ParseStored(batch)
			if err != nil {
				return err
			}
			span := int64(info.LastOffsetDelta) + 1
			if base+span <= next {
				base += span
				count += int64(info.RecordCount)
				return nil
			}
			info, krecs, err := kbatch.DecodeStoredLimits(batch, kbatch.Limits{MaxRecordBytes: a.cfg.readRecordLimit()})
			if err != nil {
				return err
			}
			for _, kr := range krecs {
				off := base + (kr.Offset - info.BaseOffset)
				if off < next || full {
					continue
				}
				if len(recs) >= maxRecords {
					full = true
					continue
				}
				pr := &floev1.Record{Key: kr.Key, Value: kr.Value, NullValue: kr.Value == nil, TimestampMs: kr.Timestamp, Offset: off, Partition: partition}
				for _, h := range kr.Headers {
					pr.Headers = append(pr.Headers, &floev1.Header{Key: h.Key, Value: h.Value})
				}
				size := recordWireSize(pr)
				if len(recs) > 0 && bytes+size > maxBytes {
					full = true
					continue
				}
				recs = append(recs, pr)
				bytes += size
				next = off + 1
			}
			base += span
			count += int64(len(krecs))
			return nil
		})
		if errors.Is(err, kbatch.ErrRecordTooLarge) {
			return nil, st, offset, fmt.Errorf("agent: batch %d of %s: %w (max_read_record_bytes)", r.BaseOffset, r.FileKey, err)
		}
		if err != nil && !errors.Is(err, errBudgetSpent) {
			return nil, st, offset, &dataLossError{Err: fmt.Errorf("agent: decode batch %d of %s: %w", r.BaseOffset, r.FileKey, err)}
		}
		if !full && count != int64(r.RecordCount) {
			return nil, st, offset, &dataLossError{Err: fmt.Errorf("agent: batch %d of %s has %d records, metadata says %d", r.BaseOffset, r.FileKey, count, r.RecordCount)}
		}
		if !full && base != r.LastOffset+1 {
			return nil, st, offset, &dataLossError{Err: fmt.Errorf("agent: batch %d of %s ends at offset %d, metadata says %d", r.BaseOffset, r.FileKey, base-1, r.LastOffset)}
		}
		if full {
			return recs, st, next, nil
		}
		// A compacted run may end with offsets whose records are gone.
		next = max(next, base)
	}
	return recs, st, next, nil
}
