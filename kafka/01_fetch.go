package kafka

import (
	"context"
	"reflect"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/agent"
	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/metadata"
)

// Fetch: v4 to v12 (v13 and up name topics by id only).
//
// Stored batches are served as bytes, whole, with their base offsets set
// to the log's offsets (the first may start below the fetch offset; Kafka
// clients skip those records, as they do for compressed batches), written
// from the read cache into the response frame without a copy
// (fetch_answer.go). The answer waits up to MaxWaitMillis (capped by the
// agent's max wait) for MinBytes, waking on the commit notices of the
// partitions asked for. PartitionMaxBytes and MaxBytes bound the bytes
// (each capped by the agent's max fetch bytes), with at least one batch
// for the first partition that has data, as KIP-74 says. read_committed
// reads the same as read_uncommitted (floe has no transactions: the last
// stable offset is the high watermark).
//
// Fetch sessions (KIP-227) are served (fetch_sessions.go): epoch 0 creates
// one (session id 0 in the answer when the agent's cache has no room),
// incremental fetches add, update and forget partitions and are answered
// with the partitions that changed only; a session id not found is
// FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH.
// READ on each topic is checked at every fetch, for the partitions of the
// session as for those of the request: a denied one answers
// TOPIC_AUTHORIZATION_FAILED.
// Deviations: partitions left out once MaxBytes is used up are answered,
// in a full answer, without data and with high watermark -1 (not read);
// an incremental answer leaves them out. No preferred read replica
// (KIP-392): every agent reads every partition.

func init() { register(kmsg.Fetch, 4, 12, async(fetch)) }

// fetchPart is one partition of a fetch.
type fetchPart struct {
	sp   sessionPart
	tp   metadata.TopicPartition
	code int16           // resolved with an error: not read
	got  agent.KafkaHeld // the read answered (records held until written)
	out  partOutcome     // what the latest read gave
}

func fetch(ctx context.Context, s *Server, cc *conn, req *kmsg.FetchRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	plan, code := s.sessions.begin(sessionRequestOf(req, cc.sessionOwner()), time.Now())
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	lim := s.be.KafkaLimits()
	wait := time.Duration(min(int64(max(req.MaxWaitMillis, 0)), lim.MaxWaitMs)) * time.Millisecond
	deadline := time.Now().Add(wait)
	total := lim.MaxFetchBytes
	if req.MaxBytes > 0 {
		total = min(total, int(req.MaxBytes))
	}
	parts := s.fetchParts(ctx, cc, plan.parts)
	for {
		wake := s.be.KafkaWake(readable(parts))
		got, stop := s.fetchOnce(ctx, parts, total)
		left := time.Until(deadline)
		if stop || got >= int(max(req.MinBytes, 1)) || left <= 0 || ctx.Err() != nil {
			break
		}
		sleepOn(ctx, wake, min(left, time.Duration(lim.PollIntervalMs)*time.Millisecond))
	}
	outs := make([]partOutcome, len(parts))
	for i := range parts {
		outs[i] = parts[i].out
	}
	id, include := s.sessions.finish(plan, outs, time.Now())
	resp.SessionID = id
	return answerOf(resp, parts, include)
}

// sessionRequestOf is what req says of sessions.
func sessionRequestOf(req *kmsg.FetchRequest, owner string) sessionRequest {
	r := sessionRequest{owner: owner, id: req.SessionID, epoch: req.SessionEpoch}
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			r.parts = append(r.parts, sessionPart{key: sessionKey{rt.Topic, rp.Partition}, offset: rp.FetchOffset,
				maxBytes: rp.PartitionMaxBytes, hwm: -1, lso: -1})
		}
	}
	for _, ft := range req.ForgottenTopics {
		for _, p := range ft.Partitions {
			r.forgotten = append(r.forgotten, sessionKey{ft.Topic, p})
		}
	}
	return r
}

// fetchParts resolves the topics of sps and checks READ on each (once per
// topic name): a partition denied, of a topic not found, or out of range
// is resolved with its error.
func (s *Server) fetchParts(ctx context.Context, cc *conn, sps []sessionPart) []fetchPart {
	type resolved struct {
		t    metadata.Topic
		code int16
	}
	ck := cc.fetchChecker()
	topics := map[string]resolved{}
	parts := make([]fetchPart, len(sps))
	for i, sp := range sps {
		r, ok := topics[sp.key.topic]
		if !ok {
			switch t, err := s.be.KafkaTopic(ctx, sp.key.topic); {
			case ck != nil && !ck.allowed(auth.OpRead, auth.Topic(sp.key.topic)):
				r.code = topicDenied // denied before its existence shows
			case err != nil:
				r.code = errCode(err)
			default:
				r.t = t
			}
			topics[sp.key.topic] = r
		}
		p := fetchPart{sp: sp, tp: metadata.TopicPartition{TopicID: r.t.ID, Partition: sp.key.partition}, code: r.code}
		if p.code == 0 && (sp.key.partition < 0 || sp.key.partition >= r.t.Partitions) {
			p.code = kerr.UnknownTopicOrPartition.Code
		}
		parts[i] = p
	}
	return parts
}

// fetchChecker checks the connection's principal, nil with auth off.
func (c *conn) fetchChecker() checker {
	if !c.s.guard().Enabled() {
		return nil
	}
	p, _ := c.authenticated()
	return connChecker{s: c.s, p: p}
}

// sessionOwner names who the connection's fetch sessions answer: its
// principal (none with auth off) and client id.
func (c *conn) sessionOwner() string {
	p, _ := c.authenticated()
	return p.Name + "\x00" + c.clientIDNow()
}

// readable lists the partitions of parts that are read.
func readable(parts []fetchPart) []metadata.TopicPartition {
	out := make([]metadata.TopicPartition, 0, len(parts))
	for _, p := range parts {
		if p.code == 0 {
			out = append(out, p.tp)
		}
	}
	return out
}

// fetchOnce reads every readable partition once, within total bytes
// (releasing what an earlier pass held), and returns the bytes read and
// whether an error answers the fetch now.
func (s *Server) fetchOnce(ctx context.Context, parts []fetchPart, total int) (int, bool) {
	got, stop := 0, false
	for i := range parts {
		p := &parts[i]
		p.got.Release()
		p.got, p.out = agent.KafkaHeld{}, partOutcome{err: p.code, hwm: -1, lso: -1}
		if p.code != 0 {
			stop = true
			continue
		}
		left := total - got
		if left <= 0 && got > 0 {
			continue
		}
		budget := max(1, left)
		if p.sp.maxBytes > 0 {
			budget = min(budget, int(p.sp.maxBytes))
		}
		r, err := s.be.KafkaReadHeld(ctx, p.tp.TopicID, p.tp.Partition, p.sp.offset, budget)
		if err != nil {
			p.out.err = errCode(err)
			stop = true
			continue
		}
		p.out = partOutcome{read: true, hwm: r.HighWatermark, lso: r.LogStartOffset}
		// Only the first partition with data may pass the total (KIP-74).
		if r.Size > 0 && (got == 0 || r.Size <= left) {
			p.got, p.out.records = r, true
			got += r.Size
			continue
		}
		r.Release()
	}
	return got, stop
}

// answerOf is resp with the partitions include picks (in order, a topic
// entry for each run of one topic), their records held by the answer;
// the others' reads are released.
func answerOf(resp *kmsg.FetchResponse, parts []fetchPart, include []bool) *fetchAnswer {
	a := &fetchAnswer{FetchResponse: resp}
	var runs []int // the partitions of each topic entry
	last := ""
	for i, p := range parts {
		if !include[i] {
			p.got.Release()
			continue
		}
		if len(runs) == 0 || p.sp.key.topic != last {
			runs = append(runs, 0)
		}
		last = p.sp.key.topic
		runs[len(runs)-1]++
	}
	resp.Topics = make([]kmsg.FetchResponseTopic, len(runs))
	t, at := -1, 0
	for i := range parts {
		if !include[i] {
			continue
		}
		p := &parts[i]
		if t < 0 || at == len(resp.Topics[t].Partitions) {
			t, at = t+1, 0
			st := &resp.Topics[t]
			*st = kmsg.NewFetchResponseTopic()
			st.Topic, st.Partitions = p.sp.key.topic, make([]kmsg.FetchResponseTopicPartition, runs[t])
		}
		sp := &resp.Topics[t].Partitions[at]
		at++
		*sp = kmsg.NewFetchResponseTopicPartition()
		sp.Partition, sp.ErrorCode, sp.RecordBatches, sp.PreferredReadReplica = p.sp.key.partition, p.out.err, noRecords, -1
		sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = p.out.hwm, p.out.hwm, p.out.lso
		if p.out.records {
			a.hold(sp, p.got)
			p.got = agent.KafkaHeld{} // the answer's now
		}
	}
	return a
}

// noRecords are a partition's records without data: empty, never null
// (size -1), which librdkafka refuses as a bad message set.
var noRecords = []byte{}

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
