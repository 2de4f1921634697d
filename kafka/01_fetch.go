package kafka

import (
	"context"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/metadata"
)

// Fetch: v4 to v12 (v13 and up name topics by id only).
//
// Stored batches are served as bytes, whole, with their base offsets set
// to the log's offsets (the first may start below the fetch offset; Kafka
// clients skip those records, as they do for compressed batches). The
// answer waits up to MaxWaitMillis (capped by the agent's max wait) for
// MinBytes, waking on the commit notices of the partitions asked for.
// PartitionMaxBytes and MaxBytes bound the bytes (each capped by the
// agent's max fetch bytes), with at least one batch for the first
// partition that has data, as KIP-74 says. read_committed reads the same
// as read_uncommitted (floe has no transactions: the last stable offset is
// the high watermark).
// Deviations: fetch sessions (KIP-227) are refused cleanly: every answer
// has session id 0 (no session created, the client keeps sending full
// fetches) and an incremental fetch of a session id gets
// FETCH_SESSION_ID_NOT_FOUND. Partitions left out once MaxBytes is used up
// are answered without data and with high watermark -1 (not read). No
// preferred read replica (KIP-392): every agent reads every partition.

func init() { register(kmsg.Fetch, 4, 12, async(fetch)) }

// fetchPart is one partition of a fetch.
type fetchPart struct {
	tp     metadata.TopicPartition
	offset int64
	max    int
	out    *kmsg.FetchResponseTopicPartition
	err    bool // resolved with an error: not read
}

func fetch(ctx context.Context, s *Server, cc *conn, req *kmsg.FetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SessionID = 0
	if req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return resp
	}
	lim := s.be.KafkaLimits()
	wait := time.Duration(min(int64(max(req.MaxWaitMillis, 0)), lim.MaxWaitMs)) * time.Millisecond
	deadline := time.Now().Add(wait)
	total := lim.MaxFetchBytes
	if req.MaxBytes > 0 {
		total = min(total, int(req.MaxBytes))
	}
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	var parts []fetchPart
	for ti, rt := range req.Topics {
		st := &resp.Topics[ti]
		*st = kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		t, terr := s.be.KafkaTopic(ctx, rt.Topic)
		st.Partitions = make([]kmsg.FetchResponseTopicPartition, len(rt.Partitions))
		for pi, rp := range rt.Partitions {
			sp := &st.Partitions[pi]
			*sp = kmsg.NewFetchResponseTopicPartition()
			sp.Partition, sp.RecordBatches = rp.Partition, noRecords
			sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
			fp := fetchPart{tp: metadata.TopicPartition{TopicID: t.ID, Partition: rp.Partition}, offset: rp.FetchOffset,
				max: int(rp.PartitionMaxBytes), out: sp}
			switch {
			case terr != nil:
				sp.ErrorCode, fp.err = errCode(terr), true
			case rp.Partition < 0 || rp.Partition >= t.Partitions:
				sp.ErrorCode, fp.err = kerr.UnknownTopicOrPartition.Code, true
			}
			parts = append(parts, fp)
		}
	}
	for {
		wake := s.be.KafkaWake(readable(parts))
		got, stop := s.fetchOnce(ctx, parts, total)
		left := time.Until(deadline)
		if stop || got >= int(max(req.MinBytes, 1)) || left <= 0 || ctx.Err() != nil {
			return resp
		}
		sleepOn(ctx, wake, min(left, time.Duration(lim.PollIntervalMs)*time.Millisecond))
	}
}

// noRecords are a partition's records without data: empty, never null
// (size -1), which librdkafka refuses as a bad message set.
var noRecords = []byte{}

// readable lists the partitions of parts that are read.
func readable(parts []fetchPart) []metadata.TopicPartition {
	out := make([]metadata.TopicPartition, 0, len(parts))
	for _, p := range parts {
		if !p.err {
			out = append(out, p.tp)
		}
	}
	return out
}

// fetchOnce reads every readable partition once, within total bytes, and
// returns the bytes read and whether an error answers the fetch now.
func (s *Server) fetchOnce(ctx context.Context, parts []fetchPart, total int) (int, bool) {
	got, stop := 0, false
	for i := range parts {
		p := &parts[i]
		if p.err {
			stop = true
			continue
		}
		sp := p.out
		sp.RecordBatches, sp.ErrorCode = noRecords, 0
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = -1, -1, -1
		left := total - got
		if left <= 0 && got > 0 {
			continue
		}
		budget := max(1, left)
		if p.max > 0 {
			budget = min(budget, p.max)
		}
		r, err := s.be.KafkaRead(ctx, p.tp.TopicID, p.tp.Partition, p.offset, budget)
		if err != nil {
			sp.ErrorCode = errCode(err)
			stop = true
			continue
		}
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = r.HighWatermark, r.HighWatermark, r.LogStartOffset
		// Only the first partition with data may pass the total (KIP-74).
		if len(r.Batches) > 0 && (got == 0 || len(r.Batches) <= left) {
			sp.RecordBatches = r.Batches
			got += len(r.Batches)
		}
	}
	return got, stop
}

// sleepOn waits for any of chans to close, d, or ctx.
func sleepOn(ctx context.Context, chans []<-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	cases := make([]reflect.SelectCase, 0, len(chans)+2)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.C)})
	for _, ch := range chans {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	reflect.Select(cases)
}
