package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

// ProducerOptions tunes a Producer. Zero fields take the defaults.
type ProducerOptions struct {
	// MaxInFlight bounds the requests sent and not yet answered (default 8).
	MaxInFlight int
	// Idempotent makes the producer take an id from InitProducer and number
	// its records per partition, so that a retried request is never stored
	// twice. Every Send must then name its partition.
	Idempotent bool
	// Compression of the batches.
	Compression floev1.Compression
	// Retries bounds the retries of one request after retriable failures
	// (default 10), with capped exponential backoff from MinBackoff
	// (default 100 ms) to MaxBackoff (default 5 s).
	Retries                int
	MinBackoff, MaxBackoff time.Duration
	// RequestTimeout bounds the wait for one answer (default 30 s).
	RequestTimeout time.Duration
	// OnResult, optional, receives each answered request, in the order the
	// requests were sent, with the tag given to Send.
	OnResult func(tag any, resp *floev1.ProduceResponse)
	// AtLeastOnce lets a plain (not idempotent) producer retry requests
	// whose outcome is unknown: lost with their stream or connection, or
	// answered Unknown or a transport Unavailable. They may then be stored
	// twice. Without it such a request fails with an error for which
	// OutcomeUnknown is true, and only NotCommitted failures are retried.
	// (An idempotent producer always retries: it cannot duplicate.)
	AtLeastOnce bool
	// Batches encodes each Send as Kafka v2 record batches in the client
	// (compressed with Compression) and sends them over
	// ProduceBatchesStream, so the agent appends them without decoding
	// records. Sends that do not name a partition are partitioned here,
	// with the agent's partitioner (the topic's partition count is asked
	// once). Answers keep ProduceResponse's shape.
	Batches bool
	// PartitionAffinity sends each partition's requests to the agent that
	// TopicService.DescribePlacement prefers for it (a Router over the
	// producer's client, tuned by Router), falling back to the client's
	// own agent for what has no preferred agent or whose agent fails
	// (producer_affinity.go). Sends that name no partition go to the
	// client's agent. MaxInFlight then bounds each agent's requests.
	PartitionAffinity bool
	Router            RouterOptions
}

func (o ProducerOptions) withDefaults() ProducerOptions {
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 8
	}
	if o.Retries <= 0 {
		o.Retries = 10
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 100 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(5*time.Second, o.MinBackoff)
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	return o
}

// maxInFlightPerPartition is how many requests of one partition an
// idempotent producer leaves unanswered: the sequencer remembers the last
// five batches of each producer and partition, so a retry of any of them
// is recognised.
const maxInFlightPerPartition = 5

// BatchError is the failure of one request: its tag and why.
type BatchError struct {
	Tag any
	Err error
}

func (e *BatchError) Error() string { return e.Err.Error() }
func (e *BatchError) Unwrap() error { return e.Err }

// Producer sends batches of records to one topic over ProduceStream,
// pipelined (up to MaxInFlight unanswered), and retries retriable failures
// in order. With Idempotent, a retry never duplicates a record; without,
// only failures where nothing was committed are retried (NotCommitted),
// and a request whose outcome is unknown (lost with its stream, answered
// Unknown) is an error (OutcomeUnknown) unless AtLeastOnce. Its methods
// are for one goroutine.
type Producer struct {
	c    *Client
	home *Client // the connection the producer was made for (c, unless it fell back)
	// fallback, optional, is where retries go once c answers Unavailable
	// (markDown is told of c then): an inner producer of affinity.
	fallback *Client
	markDown func(*Client)
	aff      *affinity // PartitionAffinity: the inner producers; the rest of the fields unused
	ctx      context.Context
	topic    string
	opts     ProducerOptions

	producerID    int64
	producerEpoch int32
	seqs          map[int32]int32 // partition -> next sequence (idempotent)

	stream  *prodStream // nil until the first send or after a failure
	nextID  uint64
	queue   []*prodReq          // unanswered and unreported requests, in send order
	byID    map[uint64]*prodReq // requests sent on the current stream, unanswered
	perPart map[int32]int       // partition -> requests in the queue
	failed  bool                // some request in the queue needs a retry

	partitions int32 // the topic's partition count (Batches, asked once)
}

// prodReq is one request and its outcome.
type prodReq struct {
	tag       any
	partition int32 // as given to Send
	req       *floev1.ProduceRequest
	resp      *floev1.ProduceResponse
	retry     bool  // failed retriably (or was lost with its stream)
	err       error // the last failure (nil: none, or no answer)
	lost      error // sent, and lost with its stream before an answer (outcome unknown)
	// maybeStored: some attempt's outcome was unknown (lost with its
	// stream, or answered so), so the request may be stored whatever a
	// later attempt answers: it never ends as failed (maybeStoredErr).
	maybeStored bool

	// Batches: the request, and the records (indices into req.Records)
	// of each of its PartitionBatches.
	breq   *floev1.ProduceBatchesRequest
	groups [][]int
}

// prodStream is one ProduceStream and the goroutine receiving its answers.
type prodStream struct {
	send    func(id uint64, r *prodReq) error
	cancel  context.CancelFunc
	answers chan prodAnswer // buffered: never blocks the receiver
	done    chan struct{}   // closed when the receiver has returned
}

// prodAnswer is an answer, or the end of the stream (err set, id unused).
type prodAnswer struct {
	msg   *floev1.ProduceStreamResponse // Response unset for batches
	batch *floev1.ProduceBatchesResponse
	err   error
}

// NewProducer returns a producer for topic. With opts.Idempotent it calls
// InitProducer first. ctx bounds every call the producer makes.
func (c *Client) NewProducer(ctx context.Context, topic string, opts ProducerOptions) (*Producer, error) {
	opts = opts.withDefaults()
	p := &Producer{c: c, home: c, ctx: ctx, topic: topic, opts: opts, producerID: -1,
		seqs: map[int32]int32{}, byID: map[uint64]*prodReq{}, perPart: map[int32]int{}}
	if opts.Idempotent {
		resp, err := p.initProducer(&floev1.InitProducerRequest{}) // producer_epoch.go
		if err != nil {
			return nil, fmt.Errorf("init producer: %w", err)
		}
		p.producerID, p.producerEpoch = resp.GetProducerId(), resp.GetProducerEpoch()
	}
	if opts.PartitionAffinity {
		a, err := newAffinity(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("partition affinity: %w", err)
		}
		p.aff = a
	}
	return p, nil
}

// Send queues records for partition (< 0: the agent partitions by key;
// not allowed when idempotent) and sends them, waiting while MaxInFlight
// requests are unanswered. It returns the first failure that retries could
// not fix, as a *BatchError.
func (p *Producer) Send(partition int32, records []*floev1.Record, tag any) error {
	if p.aff != nil {
		return p.aff.send(partition, records, tag)
	}
	req := &floev1.ProduceRequest{Topic: p.topic, Records: records, Compression: p.opts.Compression}
	if partition >= 0 {
		req.Partition = &partition
	}
	if p.opts.Idempotent {
		if partition < 0 {
			return &BatchError{Tag: tag, Err: errors.New("client: an idempotent producer must name the partition")}
		}
		seq := p.seqs[partition]
		req.ProducerId, req.ProducerEpoch, req.BaseSequence = &p.producerID, p.producerEpoch, seq
		// Sequences wrap to 0 past the largest int32, as Kafka's do.
		p.seqs[partition] = int32((int64(seq) + int64(len(records))) % (math.MaxInt32 + 1))
	}
	// A failure is retried (in order) before anything new is sent.
	for p.failed || len(p.queue) >= p.opts.MaxInFlight || (p.opts.Idempotent && p.perPart[partition] >= maxInFlightPerPartition) {
		if err := p.step(); err != nil {
			return err
		}
	}
	r := &prodReq{tag: tag, partition: partition, req: req}
	if p.opts.Batches {
		if err := p.encodeBatches(r); err != nil {
			if p.opts.Idempotent {
				p.seqs[partition] = req.GetBaseSequence() // nothing was sent
			}
			return &BatchError{Tag: tag, Err: err}
		}
	}
	p.queue = append(p.queue, r)
	p.perPart[partition]++
	p.send(r)
	return p.report()
}

// Flush waits until every request sent is answered and reported.
func (p *Producer) Flush() error {
	if p.aff != nil {
		return p.aff.flush()
	}
	for len(p.queue) > 0 {
		if err := p.step(); err != nil {
			return err
		}
	}
	return nil
}

// Settle is for after Send or Flush returned an error: it sends nothing
// more, waits for the answers of the requests still in flight (up to
// RequestTimeout for each), and hands to OnResult, in send order, every
// request that was stored. It returns the tags of the others: failed
// (not stored: refused, or answered that nothing was committed) and
// unknown (no answer, or an answer that the outcome is unknown). The
// producer is then empty; Close it.
func (p *Producer) Settle() (failed, unknown []any) {
	if p.aff != nil {
		return p.aff.settle()
	}
	for len(p.byID) > 0 && p.stream != nil {
		t := time.NewTimer(p.opts.RequestTimeout)
		select {
		case a := <-p.stream.answers:
			t.Stop()
			if a.err != nil {
				p.closeStream() // the rest are lost with it
				continue
			}
			r, ok := p.byID[a.msg.GetRequestId()]
			if !ok {
				continue
			}
			delete(p.byID, a.msg.GetRequestId())
			if a.msg.GetErrorCode() != 0 {
				r.err = status.Error(codes.Code(a.msg.GetErrorCode()), a.msg.GetErrorMessage())
			} else if p.opts.Batches {
				r.resp, r.err = r.fromBatches(a.batch)
			} else {
				r.resp = a.msg.GetResponse()
			}
		case <-t.C:
			p.closeStream()
		case <-p.ctx.Done():
			t.Stop()
			p.closeStream()
		}
	}
	p.closeStream()
	for _, r := range p.queue {
		switch {
		case r.resp != nil:
			if p.opts.OnResult != nil {
				p.opts.OnResult(r.tag, r.resp)
			}
		case r.maybeStored || r.err == nil || status.Code(r.err) == codes.Unknown || status.Code(r.err) == codes.DeadlineExceeded:
			unknown = append(unknown, r.tag)
		default:
			failed = append(failed, r.tag)
		}
	}
	p.queue, p.perPart, p.failed = nil, map[int32]int{}, false
	return failed, unknown
}

// maybeStoredErr is err, the last attempt's failure, as the request's:
// an unknown outcome (ErrOutcomeUnknown) when an earlier attempt may have
// stored it, even though this one says nothing was committed.
func (r *prodReq) maybeStoredErr(err error) error {
	if !r.maybeStored || OutcomeUnknown(err) {
		return err
	}
	return fmt.Errorf("%w: an earlier attempt's outcome is unknown; the last attempt: %w", ErrOutcomeUnknown, err)
}

// Close ends the stream. Unanswered requests are abandoned: Flush first.
func (p *Producer) Close() {
	if p.aff != nil {
		p.aff.close()
		return
	}
	p.closeStream()
}

// poll applies the answers that have arrived, without waiting, reports
// what is done and, when a request failed and nothing is in flight,
// retries the failed ones (affinity: the inner producers not sent on).
func (p *Producer) poll() error {
	for p.stream != nil && len(p.byID) > 0 {
		select {
		case a := <-p.stream.answers:
			if err := p.handle(a); err != nil {
				return err
			}
			continue
		default:
		}
		break
	}
	if err := p.report(); err != nil {
		return err
	}
	if p.failed && len(p.byID) == 0 {
		return p.recover()
	}
	return nil
}

// send sends r on the stream, opening one if needed; a failure marks r for
// a retry (the stream's end marks the others).
func (p *Producer) send(r *prodReq) {
	if p.stream == nil {
		if err := p.openStream(); err != nil {
			r.retry, p.failed, r.err = true, true, err
			return
		}
	}
	p.nextID++
	p.byID[p.nextID] = r
	// A failed Send means the stream ended: the receiver reports it, and
	// the end marks r for a retry.
	_ = p.stream.send(p.nextID, r)
}

func (p *Producer) openStream() error {
	ctx, cancel := context.WithCancel(p.ctx)
	ps := &prodStream{cancel: cancel, answers: make(chan prodAnswer, p.opts.MaxInFlight+1), done: make(chan struct{})}
	var recv func() prodAnswer
	if p.opts.Batches {
		s, err := p.c.Log.ProduceBatchesStream(ctx)
		if err != nil {
			cancel()
			return err
		}
		ps.send = func(id uint64, r *prodReq) error {
			return s.Send(&floev1.ProduceBatchesStreamRequest{RequestId: id, Request: r.breq})
		}
		recv = func() prodAnswer {
			m, err := s.Recv()
			if err != nil {
				return prodAnswer{err: err}
			}
			return prodAnswer{msg: &floev1.ProduceStreamResponse{RequestId: m.GetRequestId(), ErrorCode: m.GetErrorCode(),
				ErrorMessage: m.GetErrorMessage()}, batch: m.GetResponse()}
		}
	} else {
		s, err := p.c.Log.ProduceStream(ctx)
		if err != nil {
			cancel()
			return err
		}
		ps.send = func(id uint64, r *prodReq) error {
			return s.Send(&floev1.ProduceStreamRequest{RequestId: id, Request: r.req})
		}
		recv = func() prodAnswer {
			m, err := s.Recv()
			if err != nil {
				return prodAnswer{err: err}
			}
			return prodAnswer{msg: m}
		}
	}
	go func() {
		defer close(ps.done)
		for {
			a := recv()
			ps.answers <- a
			if a.err != nil {
				return
			}
		}
	}()
	p.stream = ps
	return nil
}

// closeStream ends the current stream and waits for its receiver.
func (p *Producer) closeStream() {
	if p.stream == nil {
		return
	}
	p.stream.cancel()
	for done := false; !done; { // drain, so the receiver never blocks
		select {
		case <-p.stream.done:
			done = true
		case <-p.stream.answers:
		}
	}
	p.stream = nil
	for id, r := range p.byID { // lost with the stream
		r.retry, p.failed, r.err, r.maybeStored = true, true, nil, true
		r.lost = fmt.Errorf("%w: the stream to %s ended before its answer", ErrOutcomeUnknown, p.c.Addr())
		delete(p.byID, id)
	}
}

// step waits for one answer (or the stream's end), then reports what is
// done and, when a request failed and nothing sent before it is pending,
// retries the failed ones in order.
func (p *Producer) step() error {
	if len(p.byID) > 0 && p.stream != nil {
		t := time.NewTimer(p.opts.RequestTimeout)
		select {
		case a := <-p.stream.answers:
			t.Stop()
			if err := p.handle(a); err != nil {
				return err
			}
		case <-t.C:
			p.closeStream() // no answer in time: the requests are retried
		case <-p.ctx.Done():
			t.Stop()
			return p.ctx.Err()
		}
	} else if len(p.byID) > 0 {
		p.closeStream()
	}
	if len(p.byID) == 0 && len(p.queue) > 0 && p.queue[0].resp == nil {
		p.failed = true // nothing in flight can answer the head: resend
	}
	if err := p.report(); err != nil {
		return err
	}
	if p.failed && len(p.byID) == 0 {
		return p.recover() // every outcome known: retry the failed in order
	}
	return nil
}

// handle applies one answer.
func (p *Producer) handle(a prodAnswer) error {
	if a.err != nil {
		p.closeStream() // marks what it carried for a retry
		return nil
	}
	r, ok := p.byID[a.msg.GetRequestId()]
	if !ok {
		return nil // an answer to a request already given up on this stream
	}
	delete(p.byID, a.msg.GetRequestId())
	if a.msg.GetErrorCode() == 0 {
		if p.opts.Batches {
			resp, err := r.fromBatches(a.batch)
			if err != nil {
				r.err = err
				return &BatchError{Tag: r.tag, Err: err}
			}
			r.resp = resp
			return nil
		}
		r.resp = a.msg.GetResponse()
		return nil
	}
	err := status.Error(codes.Code(a.msg.GetErrorCode()), a.msg.GetErrorMessage())
	r.err = err
	r.maybeStored = r.maybeStored || OutcomeUnknown(err)
	// An answer on a live stream is the agent's: its Unavailable means
	// nothing was committed. Out of order: an earlier request of its
	// partition failed; the in-order retry settles it.
	code := status.Code(err)
	if p.retriable(err) || code == codes.Unavailable || code == codes.ResourceExhausted ||
		(p.opts.Idempotent && code == codes.FailedPrecondition) {
		r.retry, p.failed = true, true
		return nil
	}
	return &BatchError{Tag: r.tag, Err: err}
}

// report hands the answered requests at the head of the queue to OnResult.
func (p *Producer) report() error {
	for len(p.queue) > 0 && p.queue[0].resp != nil {
		r := p.queue[0]
		p.queue[0] = nil
		p.queue = p.queue[1:]
		p.perPart[r.partition]--
		if p.opts.OnResult != nil {
			p.opts.OnResult(r.tag, r.resp)
		}
	}
	return nil
}

// recover resends, one at a time and in send order, every request of the
// queue that has no answer, retrying each with backoff; then reports.
func (p *Producer) recover() error {
	p.closeStream()
	for _, r := range p.queue {
		if r.resp != nil {
			continue
		}
		if r.lost != nil && !p.opts.Idempotent && !p.opts.AtLeastOnce {
			return &BatchError{Tag: r.tag, Err: fmt.Errorf("%w (set AtLeastOnce to retry anyway, or produce idempotently)", r.lost)}
		}
		r.lost = nil
		err := p.withRetries(func(ctx context.Context) error {
			err := p.resend(ctx, r)
			r.maybeStored = r.maybeStored || OutcomeUnknown(err)
			if p.fallback != nil && p.c != p.fallback && status.Code(err) == codes.Unavailable {
				p.markDown(p.c)
				p.c = p.fallback // this and later attempts, and new streams
			}
			return err
		})
		if err != nil {
			r.err = r.maybeStoredErr(err)
			return &BatchError{Tag: r.tag, Err: r.err}
		}
		r.retry = false
	}
	p.failed = false
	return p.report()
}

// resend sends r once, unary, on p.c.
func (p *Producer) resend(ctx context.Context, r *prodReq) error {
	if p.opts.Batches {
		bresp, err := p.c.Log.ProduceBatches(ctx, r.breq)
		if err != nil {
			return err
		}
		resp, err := r.fromBatches(bresp)
		if err != nil {
			return err // not a status: not retried
		}
		r.resp = resp
		return nil
	}
	resp, err := p.c.Log.Produce(ctx, r.req)
	if err == nil {
		r.resp = resp
	}
	return err
}

// retriable is Retriable for an idempotent producer (its retry cannot
// duplicate) and one with AtLeastOnce (but floe's own OUTCOME_UNKNOWN);
// a plain producer retries only what was surely not committed.
func (p *Producer) retriable(err error) bool {
	switch {
	case p.opts.Idempotent:
		return Retriable(err)
	case p.opts.AtLeastOnce:
		return status.Code(err) != codes.Unknown && Retriable(err)
	}
	return NotCommitted(err)
}

// withRetries runs call, bounded by RequestTimeout, until it succeeds, fails
// with a non-retriable error, or Retries retries are spent.
func (p *Producer) withRetries(call func(ctx context.Context) error) error {
	wait := p.opts.MinBackoff
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(p.ctx, p.opts.RequestTimeout)
		err := call(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if p.ctx.Err() != nil {
			return p.ctx.Err()
		}
		if !p.retriable(err) || attempt == p.opts.Retries {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-p.ctx.Done():
			t.Stop()
			return p.ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, p.opts.MaxBackoff)
	}
}
