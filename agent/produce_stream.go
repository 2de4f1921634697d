package agent

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/batcher"
)

// produceStream is what a pipelined produce stream (ProduceStream,
// ProduceBatchesStream) does with its messages; serveProduceStream does
// the rest, the same for both.
type produceStream[Req, Resp any] struct {
	// method names the RPC in logs.
	method string
	// recv returns the next request and its id (io.EOF at the end; a
	// *refusedError refuses only that request).
	recv func() (id uint64, req Req, err error)
	// plan validates a request and lays it out for the batcher.
	plan func(ctx context.Context, req Req) (*producePlan, error)
	// await waits for a plan's commits and builds its answer.
	await func(ctx context.Context, plan *producePlan, pend []*batcher.Pending) (Resp, error)
	// send answers a request: its response, or a gRPC code and message.
	send func(id uint64, resp Resp, code int32, msg string) error
}

// serveProduceStream appends a stream's requests in arrival order (so one
// partition's records keep the stream's order) and answers each as its
// files commit, with at most MaxStreamInFlight unanswered; a failed
// request is answered with its error and the stream goes on.
func serveProduceStream[Req, Resp any](ctx context.Context, a *Agent, s produceStream[Req, Resp]) error {
	var (
		sendMu  sync.Mutex // serialises s.send, protects sendErr
		wg      sync.WaitGroup
		slots   = make(chan struct{}, a.cfg.MaxStreamInFlight)
		sendErr error
	)
	send := func(id uint64, resp Resp, code int32, msg string) {
		sendMu.Lock()
		defer sendMu.Unlock()
		if sendErr == nil {
			sendErr = s.send(id, resp, code, msg)
		}
	}
	fail := func(id uint64, err error) {
		// Each request of the stream has its own request id for the log.
		rid := RequestID(ctx)
		if rid == "" {
			rid = RequestID(withRequestID(ctx))
		}
		err = publicError(ctx, a.log, s.method, rid+"-"+strconv.FormatUint(id, 10), err)
		st := status.Convert(err)
		var none Resp
		send(id, none, int32(st.Code()), st.Message())
	}
	defer wg.Wait()
	for {
		id, req, err := s.recv()
		if err == io.EOF {
			return nil
		}
		var refused *refusedError
		if errors.As(err, &refused) {
			// Only this request was refused (too large, does not decode).
			a.m.produced(0, 0, 0, refused)
			fail(refused.requestID, refused.err)
			continue
		}
		if err != nil {
			return err
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		start := time.Now()
		plan, err := s.plan(ctx, req)
		var (
			pend []*batcher.Pending
			held int64 // of the stream budget, until the answer is sent
		)
		if err == nil {
			// An unanswered request holds its size of the agent's stream
			// budget until its answer is sent (a client that does not read
			// its answers holds it): none left, it is refused.
			held = int64(plan.bytes + RecordOverhead*plan.n)
			if !a.streamMem.TryAcquire(held) {
				held, err = 0, a.streamBudgetSpent("produce stream")
			}
		}
		if err == nil {
			if pend, err = a.appendPlan(ctx, plan); err != nil {
				a.streamMem.Release(held)
			}
		}
		if err != nil {
			<-slots
			a.m.produced(0, 0, time.Since(start), err)
			fail(id, err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			defer a.streamMem.Release(held)
			resp, err := s.await(ctx, plan, pend)
			a.m.produced(plan.n, plan.bytes, time.Since(start), err)
			if err != nil {
				fail(id, err)
				return
			}
			send(id, resp, 0, "")
		}()
	}
}
