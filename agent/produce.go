package agent

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/grpcwire"
	"github.com/floe-broker/floe/internal/kpartition"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
)

// RecordOverhead is the framing counted for each record of a produce
// request, on top of its key, value and headers, against MaxRequestBytes:
// the most framing a record takes in a Kafka v2 batch, its varints for
// length (5 bytes), timestamp delta (10), offset delta (5), key length (5),
// value length (5) and header count (5), plus its attributes byte (1). It
// also bounds the record's protobuf framing on the wire (at most 29 bytes),
// so a request of many empty records counts as the bytes it takes.
const RecordOverhead = 36

// HeaderOverhead is the framing counted for each header of a record, in
// the record's size (against MaxRecordBytes) and so in the request's: its
// key length and value length varints in a Kafka v2 batch (5 bytes each),
// as kbatch counts it on the batch data plane and on read.
const HeaderOverhead = kbatch.HeaderOverhead

// produceGroup is the part of a request bound for one partition.
type produceGroup struct {
	partition int32
	idx       []int // positions of its records in the request
	batch     []byte
	// info is batch's header as the edge validated it (batch data plane),
	// or nil; with it the batcher does not check the batch's CRC again.
	info *kbatch.Info
}

// parsedAppender is a Producer that takes a batch already validated at the
// edge (batcher.Batcher.AppendParsed).
type parsedAppender interface {
	AppendParsed(ctx context.Context, topicID int64, partition int32, batch []byte, info kbatch.Info) (*batcher.Pending, error)
}

// lentAppender is a Producer that takes a batch lying in a buffer the
// agent lends and reuses once done is called
// (batcher.Batcher.AppendParsedLent).
type lentAppender interface {
	AppendParsedLent(ctx context.Context, topicID int64, partition int32, batch []byte, info kbatch.Info, done func()) (*batcher.Pending, error)
}

type producePlan struct {
	topic  metadata.Topic
	groups []produceGroup
	n      int
	bytes  int
	// lender, when not nil, holds the receive buffer the groups' batches
	// point into: each batch appended takes a hold of it, which the
	// producer releases once it has copied the batch.
	lender *grpcwire.Lender
}

// planProduce validates a request and encodes one batch per partition.
func (a *Agent) planProduce(ctx context.Context, req *floev1.ProduceRequest) (*producePlan, error) {
	if req == nil || len(req.GetRecords()) == 0 {
		return nil, errf(codes.InvalidArgument, "produce: the request has no records")
	}
	comp := kbatch.Compression(req.GetCompression())
	if req.GetCompression() < floev1.Compression_COMPRESSION_NONE || req.GetCompression() > floev1.Compression_COMPRESSION_ZSTD {
		return nil, errf(codes.InvalidArgument, "produce: unknown compression %d", req.GetCompression())
	}
	t, err := a.topics.getFresh(ctx, req.GetTopic())
	if err != nil {
		return nil, toStatus(err)
	}
	opts := kbatch.DefaultEncodeOptions()
	opts.Compression = comp
	if req.ProducerId != nil {
		if req.Partition == nil {
			return nil, errf(codes.InvalidArgument, "produce: an idempotent producer must name the partition")
		}
		// InitProducer issues ids from 1 with epoch 0; the metadata store
		// refuses other ids it never issued when the file commits.
		if req.GetProducerId() <= 0 {
			return nil, statusInfo(codes.FailedPrecondition, ReasonUnknownProducer, nil,
				"produce: producer id %d was never issued by InitProducer; call InitProducer for a producer id", req.GetProducerId())
		}
		if req.GetProducerEpoch() < 0 || req.GetProducerEpoch() > math.MaxInt16 || req.GetBaseSequence() < 0 {
			return nil, errf(codes.InvalidArgument, "produce: producer epoch %d (want 0..%d) or base sequence %d (want >= 0) out of range",
				req.GetProducerEpoch(), math.MaxInt16, req.GetBaseSequence())
		}
		opts.ProducerID = req.GetProducerId()
		opts.ProducerEpoch = int16(req.GetProducerEpoch())
		opts.BaseSequence = req.GetBaseSequence()
	}
	plan := &producePlan{topic: t, n: len(req.GetRecords())}
	check := a.valueCheck(t)
	now := time.Now().UnixMilli()
	budget := 0                   // bytes counted against MaxRequestBytes
	byPart := make(map[int32]int) // partition -> index in plan.groups
	nullKeyPart := int32(-1)
	for i, r := range req.GetRecords() {
		size := len(r.GetKey()) + len(r.GetValue()) + HeaderOverhead*len(r.GetHeaders())
		for _, h := range r.GetHeaders() {
			size += len(h.GetKey()) + len(h.GetValue())
		}
		if size > a.cfg.MaxRecordBytes {
			return nil, statusInfo(codes.InvalidArgument, ReasonRecordTooLarge,
				map[string]string{"max_record_bytes": strconv.Itoa(a.cfg.MaxRecordBytes)},
				"produce: record %d is %d bytes (key, value and headers, %d per header), over the agent's record limit of %d bytes",
				i, size, HeaderOverhead, a.cfg.MaxRecordBytes)
		}
		if r.GetNullValue() && len(r.GetValue()) > 0 {
			return nil, errf(codes.InvalidArgument, "produce: record %d has null_value set and a %d-byte value", i, len(r.GetValue()))
		}
		if check != nil && !r.GetNullValue() {
			if err := check(i, nonNil(r.GetValue())); err != nil {
				return nil, err
			}
		}
		if ts := r.GetTimestampMs(); ts != 0 { // 0: the agent's clock
			if err := timestampError(func() string { return "record " + strconv.Itoa(i) }, ts, now, a.cfg.TimestampBeforeMax, a.cfg.TimestampAfterMax); err != nil {
				return nil, err
			}
		}
		plan.bytes += size
		// The first record is refused only by MaxRecordBytes, so that one
		// record at the record limit always makes a request: its headers
		// counted in its size, it takes at most MaxRecordBytes +
		// RecordOverhead of the budget (before, a record of millions of
		// empty headers counted as zero bytes and passed both limits).
		budget += size + RecordOverhead
		if i > 0 && budget > a.cfg.MaxRequestBytes {
			return nil, statusInfo(codes.InvalidArgument, ReasonRequestTooLarge,
				map[string]string{"max_request_bytes": strconv.Itoa(a.cfg.MaxRequestBytes)},
				"produce: request over the agent's request limit of %d bytes at record %d of %d "+
					"(each record counts its key, value and headers plus %d bytes, and %d per header): split it",
				a.cfg.MaxRequestBytes, i, len(req.GetRecords()), RecordOverhead, HeaderOverhead)
		}
		var p int32
		switch {
		case req.Partition != nil:
			p = req.GetPartition()
		case r.Key != nil:
			p = kpartition.ForKey(r.GetKey(), t.Partitions)
		default:
			if nullKeyPart < 0 {
				nullKeyPart = rand.Int32N(t.Partitions)
			}
			p = nullKeyPart
		}
		if p < 0 || p >= t.Partitions {
			return nil, errf(codes.NotFound, "produce: partition %d of topic %q does not exist (it has %d)", p, t.Name, t.Partitions)
		}
		gi, ok := byPart[p]
		if !ok {
			gi = len(plan.groups)
			byPart[p] = gi
			plan.groups = append(plan.groups, produceGroup{partition: p})
		}
		plan.groups[gi].idx = append(plan.groups[gi].idx, i)
	}
	recs := make([]kbatch.Record, 0, len(req.GetRecords()))
	for gi := range plan.groups {
		g := &plan.groups[gi]
		recs = recs[:0]
		for _, i := range g.idx {
			r := req.GetRecords()[i]
			ts := r.GetTimestampMs()
			if ts == 0 {
				ts = now
			}
			kr := kbatch.Record{Timestamp: ts, Key: r.Key, Value: r.GetValue()}
			switch {
			case r.GetNullValue():
				kr.Value = nil // a tombstone on compacted topics
			case kr.Value == nil:
				kr.Value = []byte{}
			}
			for _, h := range r.GetHeaders() {
				kr.Headers = append(kr.Headers, kbatch.Header{Key: h.GetKey(), Value: h.GetValue()})
			}
			recs = append(recs, kr)
		}
		b, err := kbatch.Encode(recs, opts)
		if err != nil {
			return nil, errf(codes.InvalidArgument, "produce: encode batch: %v", err)
		}
		g.batch = b
	}
	return plan, nil
}

// appendPlan hands every group to the batcher, in order.
func (a *Agent) appendPlan(ctx context.Context, plan *producePlan) ([]*batcher.Pending, error) {
	// Waiting for buffer space is bounded: past MaxBackpressureWait the
	// client is told ResourceExhausted and may retry later.
	actx, cancel := context.WithTimeout(ctx, a.cfg.MaxBackpressureWait)
	defer cancel()
	pend := make([]*batcher.Pending, len(plan.groups))
	la, lends := a.producer.(lentAppender)
	pa, parsed := a.producer.(parsedAppender)
	for i := range plan.groups {
		g := &plan.groups[i]
		var (
			p   *batcher.Pending
			err error
		)
		if plan.lender != nil && !lends {
			g.batch = bytes.Clone(g.batch) // a producer that keeps what it is given
		}
		switch {
		case plan.lender != nil && lends && g.info != nil:
			plan.lender.Hold()
			if p, err = la.AppendParsedLent(actx, plan.topic.ID, g.partition, g.batch, *g.info, plan.lender.Release); err != nil {
				plan.lender.Release() // not taken
			}
		case parsed && g.info != nil:
			p, err = pa.AppendParsed(actx, plan.topic.ID, g.partition, g.batch, *g.info)
		default:
			p, err = a.producer.Append(actx, plan.topic.ID, g.partition, g.batch)
		}
		if err != nil {
			if werr := withdraw(pend[:i]); werr != nil {
				return nil, werr
			}
			if errors.Is(err, batcher.ErrBackpressure) && ctx.Err() == nil {
				return nil, status.Errorf(codes.ResourceExhausted, "produce: agent buffer full for %v, retry later", a.cfg.MaxBackpressureWait)
			}
			return nil, toStatus(err)
		}
		g.batch = nil // the batcher holds its own copy
		pend[i] = p
	}
	return pend, nil
}

// withdraw takes back the batches of a request that failed part-way, so
// that a client told the request failed does not find part of it
// committed when it retries. A batch whose file has begun its commit
// cannot be taken back: then the request's outcome is unknown.
func withdraw(pend []*batcher.Pending) error {
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	var unknown bool
	for _, p := range pend {
		_, err := p.Wait(gone)
		var fe *batcher.FlushError
		if err == nil || (errors.As(err, &fe) && fe.Ambiguous) {
			unknown = true
		}
	}
	if unknown {
		return toStatus(&batcher.FlushError{Stage: batcher.StageCommit, Ambiguous: true,
			Err: errors.New("agent: produce failed part-way after some of its partitions began committing")})
	}
	return nil
}

// awaitPlan waits for every group's commit and builds the answer.
func (a *Agent) awaitPlan(ctx context.Context, plan *producePlan, pend []*batcher.Pending) (*floev1.ProduceResponse, error) {
	resp := &floev1.ProduceResponse{Offsets: make([]int64, plan.n), Partitions: make([]int32, plan.n)}
	for gi, p := range pend {
		res, err := p.Wait(ctx)
		if err != nil {
			if errors.Is(err, metadata.ErrTopicNotFound) {
				// Deleted (maybe re-created) since it was cached.
				a.topics.forget(plan.topic.Name)
			}
			return nil, toStatus(err)
		}
		g := plan.groups[gi]
		for j, i := range g.idx {
			resp.Offsets[i] = res.BaseOffset + int64(j)
			resp.Partitions[i] = g.partition
		}
		resp.LogAppendTimeMs = max(resp.LogAppendTimeMs, res.LogAppendTime)
		resp.Duplicate = resp.Duplicate || res.Duplicate
	}
	return resp, nil
}

// Produce implements floev1.LogServiceServer.
func (a *Agent) Produce(ctx context.Context, req *floev1.ProduceRequest) (*floev1.ProduceResponse, error) {
	start := time.Now()
	plan, err := a.planProduce(ctx, req)
	if err != nil {
		a.m.produced(0, 0, time.Since(start), err)
		return nil, err
	}
	pend, err := a.appendPlan(ctx, plan)
	if err == nil {
		var resp *floev1.ProduceResponse
		resp, err = a.awaitPlan(ctx, plan, pend)
		a.m.produced(plan.n, plan.bytes, time.Since(start), err)
		return resp, err
	}
	a.m.produced(plan.n, plan.bytes, time.Since(start), err)
	return nil, err
}

// ProduceStream implements floev1.LogServiceServer. Requests are appended
// in arrival order (so one partition's records keep the stream's order) and
// answered as their files commit, with at most MaxStreamInFlight unanswered.
func (a *Agent) ProduceStream(stream floev1.LogService_ProduceStreamServer) error {
	return serveProduceStream(stream.Context(), a, produceStream[*floev1.ProduceRequest, *floev1.ProduceResponse]{
		method: floev1.LogService_ProduceStream_FullMethodName,
		recv: func() (uint64, *floev1.ProduceRequest, error) {
			m, err := stream.Recv()
			return m.GetRequestId(), m.GetRequest(), err
		},
		plan:  a.planProduce,
		await: a.awaitPlan,
		send: func(id uint64, resp *floev1.ProduceResponse, code int32, msg string) error {
			return stream.Send(&floev1.ProduceStreamResponse{RequestId: id, Response: resp, ErrorCode: code, ErrorMessage: msg})
		},
	})
}

// InitProducer implements floev1.LogServiceServer.
// With a producer id and epoch it bumps that id's epoch
// (producer_epochs.go).
func (a *Agent) InitProducer(ctx context.Context, req *floev1.InitProducerRequest) (*floev1.InitProducerResponse, error) {
	if req.ProducerId != nil || req.ProducerEpoch != nil {
		return a.reinitProducer(ctx, req)
	}
	id, epoch, err := a.meta.InitProducer(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &floev1.InitProducerResponse{ProducerId: id, ProducerEpoch: int32(epoch)}, nil
}
