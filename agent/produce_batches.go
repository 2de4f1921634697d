package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/grpcwire"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
)

// The batch data plane's produce side: clients send Kafka v2 record
// batches as they will be stored. Each is validated at the edge
// (kbatch.Validate: framing, CRC, header, every record's framing, sizes)
// before any of the request reaches the batcher, and then handed to it as
// the very bytes the request decoded into: the file's buffer is the one
// copy the agent makes.
//
// Each PartitionBatches holds exactly one batch (as Kafka's own produce
// requests do since v3): the batcher appends one batch at a time, and two
// batches appended one after the other may be split by another producer's
// batch, so a single base offset could not answer for both. A client with
// several batches for a partition names the partition again.

// planBatches validates a ProduceBatchesRequest and returns it as a plan
// of one group per PartitionBatches (idx unused).
func (a *Agent) planBatches(ctx context.Context, req *floev1.ProduceBatchesRequest) (*producePlan, error) {
	if req == nil || len(req.GetPartitions()) == 0 {
		return nil, errf(codes.InvalidArgument, "produce batches: the request has no batches")
	}
	t, err := a.topics.getFresh(ctx, req.GetTopic())
	if err != nil {
		return nil, toStatus(err)
	}
	check := a.valueCheck(t)
	plan := &producePlan{topic: t, groups: make([]produceGroup, len(req.GetPartitions()))}
	// The request's batches, counted uncompressed, share the limit a
	// request takes on the wire.
	budget := a.cfg.maxWireRequest()
	now := time.Now().UnixMilli()
	for i, pb := range req.GetPartitions() {
		p := pb.GetPartition()
		if p < 0 || p >= t.Partitions {
			return nil, errf(codes.NotFound, "produce batches: partition %d of topic %q does not exist (it has %d)", p, t.Name, t.Partitions)
		}
		var value kbatch.ValueFunc
		if check != nil {
			first := plan.n
			value = func(record int, v []byte) error { return check(first+record, v) }
		}
		var info kbatch.Info
		lim := kbatch.Limits{MaxDecompressed: max(budget, 1), MaxRecordBytes: a.cfg.MaxRecordBytes}
		cnt, err := kbatch.Validate(pb.GetBatches(), lim, func(j int, _ []byte, bi kbatch.Info) error {
			if j > 0 {
				return errf(codes.InvalidArgument,
					"produce batches: batch %d (partition %d) holds more than one record batch: send one per PartitionBatches, naming the partition again", i, p)
			}
			info = bi
			return nil
		}, value)
		if err != nil {
			return nil, batchError(err, i, p, a.cfg)
		}
		if info.ProducerID == 0 {
			// InitProducer issues ids from 1.
			return nil, statusInfo(codes.FailedPrecondition, ReasonUnknownProducer, nil,
				"produce batches: batch %d (partition %d): producer id 0 was never issued by InitProducer; call InitProducer for a producer id", i, p)
		}
		if err := a.cfg.timestampsError(func() string { return fmt.Sprintf("batch %d (partition %d)", i, p) }, cnt.MinTimestamp, info.MaxTimestamp, now); err != nil {
			return nil, err
		}
		budget -= cnt.Decompressed
		plan.groups[i] = produceGroup{partition: p, batch: pb.GetBatches(), info: &info}
		plan.n += cnt.Records
		plan.bytes += cnt.RecordBytes // as the per-record path counts them
	}
	return plan, nil
}

// batchError maps a validation error of batch i (bound for partition p)
// to the status a client can act on.
func batchError(err error, i int, p int32, cfg Config) error {
	if _, ok := status.FromError(err); ok {
		return err // from the value check or the one-batch rule
	}
	switch {
	case errors.Is(err, kbatch.ErrRecordTooLarge):
		return statusInfo(codes.InvalidArgument, ReasonRecordTooLarge,
			map[string]string{"max_record_bytes": strconv.Itoa(cfg.MaxRecordBytes)},
			"produce batches: batch %d (partition %d): %s (the agent's record limit)", i, p, innermostText(err, kbatch.ErrRecordTooLarge))
	case errors.Is(err, kbatch.ErrTooLarge):
		return statusInfo(codes.InvalidArgument, ReasonRequestTooLarge,
			map[string]string{"max_request_bytes": strconv.Itoa(cfg.MaxRequestBytes)},
			"produce batches: request over the agent's request limit of %d bytes at batch %d (partition %d), batches counted uncompressed: split it",
			cfg.MaxRequestBytes, i, p)
	}
	return statusInfo(codes.InvalidArgument, ReasonInvalidBatch,
		map[string]string{"batch": strconv.Itoa(i), "partition": strconv.Itoa(int(p))},
		"produce batches: batch %d (partition %d): %v", i, p, err)
}

// awaitBatches waits for every batch's commit and builds the answer.
func (a *Agent) awaitBatches(ctx context.Context, plan *producePlan, pend []*batcher.Pending) (*floev1.ProduceBatchesResponse, error) {
	resp := &floev1.ProduceBatchesResponse{Results: make([]*floev1.PartitionProduceResult, len(pend))}
	for i, p := range pend {
		res, err := p.Wait(ctx)
		if err != nil {
			if errors.Is(err, metadata.ErrTopicNotFound) {
				a.topics.forget(plan.topic.Name)
			}
			return nil, toStatus(err)
		}
		resp.Results[i] = &floev1.PartitionProduceResult{Partition: plan.groups[i].partition, BaseOffset: res.BaseOffset, Duplicate: res.Duplicate}
		resp.LogAppendTimeMs = max(resp.LogAppendTimeMs, res.LogAppendTime)
	}
	return resp, nil
}

// ProduceBatches implements floev1.LogServiceServer.
func (a *Agent) ProduceBatches(ctx context.Context, req *floev1.ProduceBatchesRequest) (*floev1.ProduceBatchesResponse, error) {
	start := time.Now()
	plan, err := a.planBatches(ctx, req)
	if err != nil {
		a.m.produced(0, 0, time.Since(start), err)
		return nil, err
	}
	pend, err := a.appendPlan(ctx, plan)
	var resp *floev1.ProduceBatchesResponse
	if err == nil {
		resp, err = a.awaitBatches(ctx, plan, pend)
	}
	a.m.produced(plan.n, plan.bytes, time.Since(start), err)
	return resp, err
}

// ProduceBatchesStream implements floev1.LogServiceServer as ProduceStream
// does: requests appended in arrival order, answered as their files
// commit, at most MaxStreamInFlight unanswered.
//
// With the agent's codec (GRPCServerOptions) and a batcher that takes lent
// batches, each request is received as a grpcwire.ProduceBatchesIn: its
// batches point into the pooled receive buffer, lent to the batcher until
// it has copied them into their file, instead of being copied out of it
// by protobuf. The stream's own hold on a request's buffer lasts until the
// next receive (serveProduceStream plans and appends a request before it
// receives the next one).
func (a *Agent) ProduceBatchesStream(stream floev1.LogService_ProduceBatchesStreamServer) error {
	_, lends := a.producer.(lentAppender)
	var lender *grpcwire.Lender // the last request's buffer, until the next receive
	letGo := func() {
		if lender != nil {
			lender.Release()
			lender = nil
		}
	}
	defer letGo()
	return serveProduceStream(stream.Context(), a, produceStream[*floev1.ProduceBatchesRequest, *floev1.ProduceBatchesResponse]{
		method: floev1.LogService_ProduceBatchesStream_FullMethodName,
		recv: func() (uint64, *floev1.ProduceBatchesRequest, error) {
			letGo()
			if !lends {
				m, err := stream.Recv()
				return m.GetRequestId(), m.GetRequest(), err
			}
			in := grpcwire.NewProduceBatchesIn()
			err := stream.RecvMsg(in)
			lender = in.Lend()
			return in.GetRequestId(), in.GetRequest(), err
		},
		plan: func(ctx context.Context, req *floev1.ProduceBatchesRequest) (*producePlan, error) {
			plan, err := a.planBatches(ctx, req)
			if plan != nil {
				plan.lender = lender
			}
			return plan, err
		},
		await: a.awaitBatches,
		send: func(id uint64, resp *floev1.ProduceBatchesResponse, code int32, msg string) error {
			return stream.Send(&floev1.ProduceBatchesStreamResponse{RequestId: id, Response: resp, ErrorCode: code, ErrorMessage: msg})
		},
	})
}
