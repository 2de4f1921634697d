package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/chaos/history"
	"github.com/floe-broker/floe/client"
)

// Group is the consumer group of the workload's members.
const Group = "chaos"

// workload runs the clients of one run against a deployment and records
// what they see.
type workload struct {
	clients    []*client.Client
	rec        *history.Recorder
	topic      string
	partitions int32
	maxSends   int // per producer
	log        *slog.Logger

	// crash asks the group members to abort (as a crash) and start again.
	crash chan struct{}
	// sent counts the sends of all producers.
	sent atomic.Int64
}

func (w *workload) add(op history.Op) {
	op.Topic = w.topic
	if err := w.rec.Add(op); err != nil && !errors.Is(err, history.ErrFull) {
		w.log.Warn("chaos: record", "err", err)
	}
}

// client returns the i-th agent's client, round robin.
func (w *workload) client(i int) *client.Client { return w.clients[i%len(w.clients)] }

// rotated returns the clients starting at the i-th.
func (w *workload) rotated(i int) []*client.Client {
	out := make([]*client.Client, 0, len(w.clients))
	for j := range w.clients {
		out = append(out, w.client(i+j))
	}
	return out
}

type sendTag struct {
	value, key string
	partition  int32
	sent       int64 // unix nanoseconds
}

// producer sends values one record per request until ctx ends or it sent
// maxSends, over a new Producer (on the next agent) after each failure.
// kind is plain, pipelined or idempotent.
func (w *workload) producer(ctx context.Context, name, kind string) {
	seq := 0
	for attempt := 0; ctx.Err() == nil && seq < w.maxSends; attempt++ {
		seq = w.produceSession(ctx, name, kind, seq, attempt)
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// produceSession runs one Producer; it returns the next sequence number.
func (w *workload) produceSession(ctx context.Context, name, kind string, seq, attempt int) int {
	var mu sync.Mutex // guards pending
	pending := map[sendTag]bool{}
	opts := client.ProducerOptions{MaxInFlight: 1, Retries: 5, MaxBackoff: time.Second, RequestTimeout: 10 * time.Second,
		OnResult: func(tag any, resp *floev1.ProduceResponse) {
			t := tag.(sendTag)
			mu.Lock()
			delete(pending, t)
			mu.Unlock()
			w.add(history.Op{Type: history.Send, Process: name, Partition: t.partition, Key: t.key, Value: t.value,
				Outcome: history.OK, Offset: resp.GetOffsets()[0], Start: t.sent})
		}}
	switch kind {
	case "pipelined":
		opts.MaxInFlight, opts.Batches = 8, true
	case "idempotent":
		opts.MaxInFlight, opts.Idempotent = 4, true
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	p, err := w.client(attempt).NewProducer(pctx, w.topic, opts)
	if err != nil {
		return seq
	}
	defer p.Close()
	var sendErr error
	for ; ctx.Err() == nil && seq < w.maxSends; seq++ {
		t := sendTag{value: fmt.Sprintf("%s-%d", name, seq), key: fmt.Sprintf("k%d", seq%17), partition: int32(seq) % w.partitions,
			sent: time.Now().UnixNano()}
		mu.Lock()
		pending[t] = true
		mu.Unlock()
		w.sent.Add(1)
		if sendErr = p.Send(t.partition, []*floev1.Record{client.Value([]byte(t.key), []byte(t.value))}, t); sendErr != nil {
			seq++
			break
		}
	}
	if sendErr == nil {
		if sendErr = p.Flush(); sendErr == nil {
			return seq
		}
	}
	failed, unknown := p.Settle()
	outcome := map[sendTag]string{}
	for _, t := range failed {
		outcome[t.(sendTag)] = history.Failed
	}
	for _, t := range unknown {
		outcome[t.(sendTag)] = history.Unknown
	}
	var be *client.BatchError
	if errors.As(sendErr, &be) {
		if _, ok := outcome[be.Tag.(sendTag)]; !ok && client.NotCommitted(be.Err) {
			outcome[be.Tag.(sendTag)] = history.Failed
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for t := range pending {
		out, ok := outcome[t]
		if !ok {
			out = history.Unknown // never answered: it may have been stored
		}
		w.add(history.Op{Type: history.Send, Process: name, Partition: t.partition, Key: t.key, Value: t.value, Outcome: out, Start: t.sent})
	}
	return seq
}

// fetcher reads every partition with Fetch, in turn, until ctx ends.
func (w *workload) fetcher(ctx context.Context, name string, n int) {
	next := make([]int64, w.partitions)
	for i := 0; ctx.Err() == nil; i++ {
		p := int32(i) % w.partitions
		fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := w.client(n+i/int(w.partitions)).Fetch(fctx, w.topic, p, next[p], 1<<20, 200)
		cancel()
		if ls, ok := logStartOf(err); ok && ls > next[p] {
			next[p] = ls // retention deleted it: on from the log start
			continue
		}
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		for _, r := range resp.GetRecords() {
			if r.GetOffset() < next[p] {
				continue
			}
			w.add(history.Op{Type: history.Read, Process: name, Partition: p, Offset: r.GetOffset(),
				Key: string(r.GetKey()), Value: string(r.GetValue())})
			next[p] = r.GetOffset() + 1
		}
	}
}

// subscriber reads every partition from 0 with SubscribeResume.
func (w *workload) subscriber(ctx context.Context, name string, n int) {
	offsets := map[int32]int64{}
	for p := range w.partitions {
		offsets[p] = 0
	}
	req := &floev1.SubscribeRequest{Topic: w.topic, Offsets: offsets}
	for ctx.Err() == nil {
		err := client.SubscribeResume(ctx, w.rotated(n), req, client.ResumeOptions{MaxBackoff: time.Second,
			Retriable: func(err error) bool { _, trimmed := logStartOf(err); return !trimmed }},
			func(resp *floev1.SubscribeResponse) error {
				recs, err := client.ResponseRecords(resp, 0)
				if err != nil {
					return err
				}
				for _, r := range recs {
					w.add(history.Op{Type: history.Read, Process: name, Partition: r.GetPartition(), Offset: r.GetOffset(),
						Key: string(r.GetKey()), Value: string(r.GetValue())})
					req.Offsets[r.GetPartition()] = r.GetOffset() + 1
				}
				return nil
			})
		if _, trimmed := logStartOf(err); trimmed {
			for p, o := range req.Offsets {
				req.Offsets[p] = w.trimmedPast(ctx, p, o) // retention deleted it: on from the log start
			}
		}
		if ctx.Err() == nil {
			w.log.Debug("chaos: subscription ended", "err", err)
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// member runs group members one after another: each until ctx ends or a
// crash is asked for (it then aborts, as a crash would, and the next
// starts).
func (w *workload) member(ctx context.Context, name string, n int, stop <-chan struct{}) {
	for gen := 0; ctx.Err() == nil; gen++ {
		inst := fmt.Sprintf("%s.%d", name, gen)
		if !w.memberSession(ctx, inst, n+gen, stop) {
			return
		}
	}
}

// memberSession runs one member; it returns false when the member was
// closed for good (stop or ctx).
func (w *workload) memberSession(ctx context.Context, inst string, n int, stop <-chan struct{}) bool {
	var g *client.GroupConsumer
	memberName := func() string { return inst + "/" + g.MemberID() }
	g, err := client.NewGroupConsumer(w.rotated(n), client.GroupOptions{Group: Group, Topic: w.topic, Earliest: true,
		SessionTimeout: SessionTimeout, Resume: client.ResumeOptions{MaxBackoff: time.Second, Retriable: func(error) bool { return true }},
		OnAssign: func(assigned map[int32]*floev1.AssignedPartition, _ []int32) {
			ps := make([]int32, 0, len(assigned))
			for p := range assigned {
				ps = append(ps, p)
			}
			w.add(history.Op{Type: history.Assign, Process: inst, Group: Group, Member: memberName(), Partitions: ps})
		}})
	if err != nil {
		w.log.Warn("chaos: group consumer", "err", err)
		return false
	}
	var due commitDue
	commit := func() {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		err := g.Commit(cctx)
		due.committed(err == nil)
		if err != nil {
			return
		}
		for p := range g.Assignment() {
			if pos, ok := g.Position(p); ok {
				w.add(history.Op{Type: history.Commit, Group: Group, Member: memberName(), Partition: p, Offset: pos})
			}
		}
	}
	for {
		select {
		case <-w.crash:
			g.Abort()
			w.add(history.Op{Type: history.MemberEnd, Group: Group, Member: memberName(), Detail: "aborted"})
			return true
		case <-stop:
			commit()
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			_ = g.Close(cctx)
			cancel()
			w.add(history.Op{Type: history.MemberEnd, Group: Group, Member: memberName(), Detail: "closed"})
			return false
		default:
		}
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		r, err := g.Poll(pctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			g.Abort()
			return false
		case err != nil && !errors.Is(err, context.DeadlineExceeded):
			w.log.Debug("chaos: poll", "member", inst, "err", err)
			g.Abort()
			w.add(history.Op{Type: history.MemberEnd, Group: Group, Member: memberName(), Detail: "failed: " + err.Error()})
			return true
		case r == nil:
			if due.idle() {
				commit()
			}
			continue
		}
		w.add(history.Op{Type: history.Read, Process: inst, Group: Group, Member: memberName(), Partition: r.GetPartition(),
			Offset: r.GetOffset(), Key: string(r.GetKey()), Value: string(r.GetValue())})
		if due.read() {
			commit()
		}
	}
}

// commitDue is when a member commits: every commitEvery records read, and
// when idle with records read since its last commit. A failed commit
// leaves them uncommitted, so that the next read or idle poll tries
// again: a member whose commit failed (its stream was resuming, its
// agent cut off) once the records stopped would otherwise never commit
// them, and its group would not reach the high watermark.
type commitDue struct{ uncommitted int }

const commitEvery = 10

// read counts a record read and reports whether to commit.
func (c *commitDue) read() bool { c.uncommitted++; return c.uncommitted >= commitEvery }

// idle reports whether to commit on an idle poll.
func (c *commitDue) idle() bool { return c.uncommitted > 0 }

// committed records a commit's outcome.
func (c *commitDue) committed(ok bool) {
	if ok {
		c.uncommitted = 0
	}
}
