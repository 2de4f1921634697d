package kafka

import (
	"context"
	"github.com/floe-broker/floe/batcher"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/agent"
)

// Produce: v3 to v11 (record batches v2 only; v12 and up are for
// transactions).
//
// Each partition's records are one Kafka v2 record batch, validated at the
// edge by kbatch.Validate and handed to the batcher as stored bytes, as
// the gRPC ProduceBatches does: the records are stored exactly as the
// client encoded them (compression, timestamps, headers). Acks 1 and all
// (-1) both answer once the batch is in the object store and its offsets
// are committed; acks 0 gets no answer, as in Kafka (the batch is still
// committed or refused). Batches are appended in request order on the
// connection's reader, so an idempotent producer's pipelined requests (up
// to 5 in flight) keep their sequence; sequence rules are floe's (the same
// as Kafka's: duplicates of the last 5 batches get their original offsets,
// gaps get OUT_OF_ORDER_SEQUENCE_NUMBER, a stale epoch
// INVALID_PRODUCER_EPOCH).
// Deviations: log append time is never set (LogAppendTime -1: floe keeps
// the producer's timestamps); TimeoutMillis is not used (the batcher's
// commit timeout bounds the wait); transactional produce is refused
// (floe has no transactions: InitProducerId refuses transactional ids).

func init() { register(kmsg.Produce, 3, 11, produce) }

// producePart is one partition of a produce request, appended or refused.
type producePart struct {
	topic, part int // indexes in the response
	pending     *agent.KafkaPending
}

func produce(s *Server, cc *conn, r kmsg.Request) func(context.Context) kmsg.Response {
	req := r.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	var code int16
	switch {
	case req.Acks != 0 && req.Acks != 1 && req.Acks != -1:
		code = kerr.InvalidRequiredAcks.Code
	case req.TransactionID != nil && *req.TransactionID != "":
		code = kerr.TransactionalIDAuthorizationFailed.Code
	}
	var parts []producePart
	// The batcher learns where this connection stands: a request in
	// flight, its batches appended, its answer made (writers.go there: a
	// file every writer waits on is sealed without lingering on).
	cc.writer.Begin()
	appended := false
	defer func() {
		if !appended { // a panic below: the connection closes, the writer with it
			cc.writer.Appended()
			cc.writer.End()
		}
	}()
	actx := batcher.WithWriter(cc.ctx, cc.writer)
	for ti, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
			sp.ErrorCode = code
			if code == 0 {
				p, err := s.be.KafkaAppend(actx, rt.Topic, rp.Partition, rp.Records)
				if err != nil {
					sp.ErrorCode, sp.ErrorMessage = errCode(err), errMessage(err)
				} else {
					parts = append(parts, producePart{topic: ti, part: len(st.Partitions), pending: p})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	appended = true
	cc.writer.Appended()
	if req.Acks == 0 {
		cc.writer.End() // the client waits for no answer
	}
	return func(ctx context.Context) kmsg.Response {
		// Whatever becomes of the connection, the batches appended are
		// committed or refused, never withdrawn half-way.
		wctx := context.WithoutCancel(ctx)
		var wg sync.WaitGroup
		for _, p := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := p.pending.Wait(wctx)
				sp := &resp.Topics[p.topic].Partitions[p.part]
				if err != nil {
					sp.ErrorCode, sp.ErrorMessage = errCode(err), errMessage(err)
					return
				}
				sp.BaseOffset = res.BaseOffset
			}()
		}
		wg.Wait()
		if req.Acks == 0 {
			return nil
		}
		cc.writer.End()
		return resp
	}
}
