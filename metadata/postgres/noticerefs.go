package postgres

import (
	"strconv"
	"strings"

	"github.com/floe-broker/floe/metadata"
)

// Commit notices with batches. Besides each partition's new high
// watermark (the notice channel, "topic:partition:hw" items), the
// notifier announces the batches it committed on a second channel, the
// notice channel's name with refsChannelSuffix, so that the agents reading
// those partitions learn where the new batches are without a FindBatches
// query each. Agents of earlier releases do not listen to it. A payload
// is comma-separated items, one per committed run of batches:
//
//	topic:partition:base:count:byteOffset:byteLength:maxTimestamp:appendTime:fileSize:fileKey
//
// (decimal integers; the file key last, as it is: floe's keys hold no
// comma). The items of one partition are in offset order. A malformed
// payload is ignored: the high-watermark notice still wakes the readers,
// who then query.
const refsChannelSuffix = "_batches"

// refsChannel is the channel of channel's batch notices.
func refsChannel(channel string) string { return channel + refsChannelSuffix }

// Bounds of the batches a notifier remembers between two sends: per
// partition (past it that partition's are dropped, its high watermark
// still announced) and in all.
const (
	maxPendingRefsPerPartition = 64
	maxPendingRefs             = 4096
)

// refsOf returns the batches a commit added, one per run (results in the
// order of f.Batches), leaving out refused and duplicate ones. Nil when a
// key cannot be carried (a comma in it).
func refsOf(f metadata.FileCommit, results []metadata.BatchResult) []metadata.BatchRef {
	if strings.ContainsAny(f.Key, ",") {
		return nil
	}
	refs := make([]metadata.BatchRef, 0, len(results))
	for i, r := range results {
		if r.Err != nil || r.Duplicate || r.BaseOffset < 0 {
			continue
		}
		b := f.Batches[i]
		refs = append(refs, metadata.BatchRef{
			TopicID: b.TopicID, Partition: b.Partition,
			BaseOffset: r.BaseOffset, LastOffset: r.BaseOffset + int64(b.RecordCount) - 1,
			FileKey: f.Key, FileSize: f.Size, ByteOffset: b.ByteOffset, ByteLength: b.ByteLength,
			RecordCount: b.RecordCount, MaxTimestamp: b.MaxTimestamp, LogAppendTime: r.LogAppendTime,
		})
	}
	return refs
}

// appendRefItem appends r's payload item to buf.
func appendRefItem(buf []byte, r *metadata.BatchRef) []byte {
	for _, v := range [...]int64{r.TopicID, int64(r.Partition), r.BaseOffset, int64(r.RecordCount),
		r.ByteOffset, r.ByteLength, r.MaxTimestamp, r.LogAppendTime, r.FileSize} {
		buf = strconv.AppendInt(buf, v, 10)
		buf = append(buf, ':')
	}
	return append(buf, r.FileKey...)
}

// refItemFields is the number of integer fields before an item's key.
const refItemFields = 9

// ParseRefsPayload decodes a batch notice payload into a notice with its
// Batches, and its Partitions' high watermarks at the end of their last
// batch. ok is false for a malformed payload; it never panics.
func ParseRefsPayload(payload string) (n metadata.Notice, ok bool) {
	if payload == "" {
		return metadata.Notice{}, false
	}
	var v [refItemFields]int64
	index := map[[2]int64]int{}
	for item := range strings.SplitSeq(payload, ",") {
		rest := item
		for i := range v {
			field, after, found := strings.Cut(rest, ":")
			if !found {
				return metadata.Notice{}, false
			}
			x, err := strconv.ParseInt(field, 10, 64)
			if err != nil {
				return metadata.Notice{}, false
			}
			v[i], rest = x, after
		}
		topic, part, base, count := v[0], v[1], v[2], v[3]
		if rest == "" || part < 0 || part > 1<<31-1 || base < 0 || count < 1 || count > 1<<31-1 ||
			v[4] < 0 || v[5] < 1 || v[4] > v[8]-v[5] || base > 1<<62 {
			return metadata.Notice{}, false
		}
		r := metadata.BatchRef{TopicID: topic, Partition: int32(part), BaseOffset: base, LastOffset: base + count - 1,
			FileKey: rest, FileSize: v[8], ByteOffset: v[4], ByteLength: v[5], RecordCount: int32(count),
			MaxTimestamp: v[6], LogAppendTime: v[7]}
		k := [2]int64{topic, part}
		i, seen := index[k]
		if !seen {
			i = len(n.Partitions)
			index[k] = i
			n.Partitions = append(n.Partitions, metadata.PartitionNotice{TopicID: topic, Partition: int32(part)})
		} else if n.Partitions[i].HighWatermark > r.BaseOffset {
			return metadata.Notice{}, false // not in offset order
		}
		n.Partitions[i].HighWatermark = r.LastOffset + 1
		n.Batches = append(n.Batches, r)
	}
	return n, true
}
