package client_test

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/agenttest"
)

// startAgent runs a real agent (SQLite, the in-memory store) with topic
// "t" of parts partitions until the end of t, and returns a client of it:
// what the fakes of these tests are held to.
func startAgent(t *testing.T, parts int32) *client.Client {
	t.Helper()
	c := agenttest.StartLocal(t, agenttest.Default()).Client
	if _, err := c.CreateTopic(context.Background(), "t", parts, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFakeSeqFollowsTheAgent holds fakeSeq (no fault set) to a real
// agent on generated requests of one idempotent producer and plain ones
// over three partitions: the next sequence, repeats of recent batches
// (the agent answers their first offsets), repeats older than its window,
// gaps. Each answer's status code and offsets must be the agent's.
func TestFakeSeqFollowsTheAgent(t *testing.T) {
	ctx := context.Background()
	real := startAgent(t, 3)
	fake := startFakeServer(t, &fakeSeq{log: map[int32][]string{}, next: map[int32]int32{}, recent: map[int32][][2]int64{}})
	rp, err := real.Log.InitProducer(ctx, &floev1.InitProducerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	fp, err := fake.Log.InitProducer(ctx, &floev1.InitProducerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	rnd := mrand.New(mrand.NewPCG(3, 4))
	next := map[int32]int32{}      // the producer's next sequence per partition
	sent := map[int32][][2]int32{} // partition -> (base sequence, records) of its batches sent and accepted
	for i := range 300 {
		p := rnd.Int32N(3)
		n := int32(1 + rnd.IntN(3))
		seq := next[p]
		kind := "next"
		switch k := rnd.IntN(10); {
		case k == 0:
			kind = "plain"
		case k <= 2 && len(sent[p]) > 0:
			kind = "repeat"
			b := sent[p][rnd.IntN(len(sent[p]))]
			seq, n = b[0], b[1]
		case k == 3:
			kind = "gap"
			seq += 1 + rnd.Int32N(3)
		}
		recs := make([]*floev1.Record, n)
		for j := range recs {
			recs[j] = &floev1.Record{Value: fmt.Appendf(nil, "%d-%d", i, j)}
		}
		req := &floev1.ProduceRequest{Topic: "t", Partition: proto.Int32(p), Records: recs}
		rreq, freq := proto.Clone(req).(*floev1.ProduceRequest), proto.Clone(req).(*floev1.ProduceRequest)
		if kind != "plain" {
			rreq.ProducerId, rreq.ProducerEpoch, rreq.BaseSequence = proto.Int64(rp.GetProducerId()), rp.GetProducerEpoch(), seq
			freq.ProducerId, freq.ProducerEpoch, freq.BaseSequence = proto.Int64(fp.GetProducerId()), fp.GetProducerEpoch(), seq
		}
		want, werr := real.Log.Produce(ctx, rreq)
		got, gerr := fake.Log.Produce(ctx, freq)
		if status.Code(werr) != status.Code(gerr) {
			t.Fatalf("request %d (%s, partition %d, sequence %d, %d records): fakeSeq %v, the agent %v", i, kind, p, seq, n, gerr, werr)
		}
		if werr != nil {
			continue
		}
		if fmt.Sprint(want.GetOffsets()) != fmt.Sprint(got.GetOffsets()) {
			t.Fatalf("request %d (%s, partition %d, sequence %d): fakeSeq offsets %v, the agent %v", i, kind, p, seq, got.GetOffsets(), want.GetOffsets())
		}
		if kind == "next" {
			sent[p] = append(sent[p], [2]int32{seq, n})
			next[p] += n
		}
	}
}

// TestFakeLogFollowsTheAgent holds fakeLog (no failure) to a real agent
// holding the same log (n records in each of two partitions, the value
// of offset i the byte i): ListOffsets earliest, latest and of an unknown
// topic; a subscription from given offsets delivers each partition's
// records from there, in order, with the high watermark.
func TestFakeLogFollowsTheAgent(t *testing.T) {
	const n = 20
	ctx := context.Background()
	real := startAgent(t, 2)
	fake := startFake(t, &fakeLog{n: n, failAfter: -1})
	for p := range int32(2) {
		for i := range n {
			if _, err := real.Produce(ctx, "t", p, &floev1.Record{Value: []byte{byte(i)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, req := range []*floev1.ListOffsetsRequest{
		{Topic: "t", Spec: floev1.OffsetSpec_OFFSET_SPEC_EARLIEST}, {Topic: "t", Spec: floev1.OffsetSpec_OFFSET_SPEC_LATEST},
		{Topic: "t", Partitions: []int32{1}, Spec: floev1.OffsetSpec_OFFSET_SPEC_LATEST}, {Topic: "nope"},
	} {
		want, werr := real.Log.ListOffsets(ctx, req)
		got, gerr := fake.Log.ListOffsets(ctx, req)
		if status.Code(werr) != status.Code(gerr) || fmt.Sprint(want.GetOffsets()) != fmt.Sprint(got.GetOffsets()) {
			t.Errorf("ListOffsets(%v): fakeLog %v %v, the agent %v %v", req, got.GetOffsets(), gerr, want.GetOffsets(), werr)
		}
	}
	from := map[int32]int64{0: 3, 1: 17}
	read := func(c *client.Client) string {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		seen := map[int32][]string{}
		err := c.Subscribe(sctx, &floev1.SubscribeRequest{Topic: "t", Partitions: []int32{0, 1}, Offsets: from}, func(r *floev1.SubscribeResponse) error {
			if r.GetHighWatermark() != n {
				return fmt.Errorf("partition %d: high watermark %d, want %d", r.GetPartition(), r.GetHighWatermark(), n)
			}
			for _, rec := range r.GetRecords() {
				seen[r.GetPartition()] = append(seen[r.GetPartition()], fmt.Sprintf("%d=%d", rec.GetOffset(), rec.GetValue()[0]))
			}
			if int64(len(seen[0])) == n-from[0] && int64(len(seen[1])) == n-from[1] {
				cancel()
			}
			return nil
		})
		if err != nil && !errors.Is(err, context.Canceled) && status.Code(err) != codes.Canceled {
			t.Errorf("subscribe: %v", err)
		}
		return fmt.Sprint(seen[0], seen[1])
	}
	if got, want := read(fake), read(real); got != want {
		t.Errorf("subscription from %v: fakeLog delivered\n%s\nthe agent\n%s", from, got, want)
	}
}
