package client_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeLog is a LogService over a fixed log of n records in each of two
// partitions. Its first subscription fails with failCode after failAfter
// messages; with rewind it answers from two records before the offsets
// asked for (a misbehaving agent).
type fakeLog struct {
	floev1.UnimplementedLogServiceServer
	n         int64
	failAfter int
	failCode  codes.Code
	rewind    bool

	mu       sync.Mutex // protects the fields below
	requests []map[int32]int64
	failed   bool
}

func (f *fakeLog) ListOffsets(_ context.Context, req *floev1.ListOffsetsRequest) (*floev1.ListOffsetsResponse, error) {
	if req.GetTopic() != "t" {
		return nil, status.Error(codes.NotFound, "no topic")
	}
	off := f.n
	if req.GetSpec() == floev1.OffsetSpec_OFFSET_SPEC_EARLIEST {
		off = 0
	}
	resp := &floev1.ListOffsetsResponse{}
	parts := req.GetPartitions()
	if len(parts) == 0 {
		parts = []int32{0, 1}
	}
	for _, p := range parts {
		resp.Offsets = append(resp.Offsets, &floev1.PartitionOffset{Partition: p, Offset: off})
	}
	return resp, nil
}

func (f *fakeLog) Subscribe(req *floev1.SubscribeRequest, stream floev1.LogService_SubscribeServer) error {
	f.mu.Lock()
	f.requests = append(f.requests, req.GetOffsets())
	fail := !f.failed
	f.failed = true
	f.mu.Unlock()
	next := map[int32]int64{}
	for p, off := range req.GetOffsets() {
		if f.rewind {
			off = max(0, off-2)
		}
		next[p] = off
	}
	sent := 0
	for {
		progress := false
		for _, p := range []int32{0, 1} {
			off, ok := next[p]
			if !ok || off >= f.n {
				continue
			}
			if fail && sent == f.failAfter {
				return status.Error(f.failCode, "injected failure")
			}
			resp := &floev1.SubscribeResponse{Partition: p, HighWatermark: f.n}
			for i := off; i < min(off+3, f.n); i++ {
				resp.Records = append(resp.Records, &floev1.Record{Partition: p, Offset: i, Value: []byte{byte(i)}})
			}
			if err := stream.Send(resp); err != nil {
				return err
			}
			next[p] = off + int64(len(resp.Records))
			sent++
			progress = true
		}
		if !progress {
			<-stream.Context().Done() // at the end: wait like a follower
			return stream.Context().Err()
		}
	}
}

// startFake serves f on a loopback port and returns a client of it.
func startFake(t *testing.T, f *fakeLog) *client.Client {
	t.Helper()
	return startFakeServer(t, f)
}

// startFakeServer serves a LogService (and a GroupService if f is one too)
// on a loopback port and returns a client of it.
func startFakeServer(t *testing.T, f floev1.LogServiceServer) *client.Client {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	floev1.RegisterLogServiceServer(gs, f)
	if g, ok := f.(floev1.GroupServiceServer); ok {
		floev1.RegisterGroupServiceServer(gs, g)
	}
	done := make(chan struct{})
	go func() { _ = gs.Serve(lis); close(done) }()
	c, err := client.Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); gs.Stop(); <-done })
	return c
}

// collect runs SubscribeResume until it has n records of each partition
// and checks each partition's offsets are 0..n-1, once each, in order.
func collect(t *testing.T, clients []*client.Client, n int64, opts client.ResumeOptions) {
	t.Helper()
	got := map[int32][]int64{}
	req := &floev1.SubscribeRequest{Topic: "t", Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := client.SubscribeResume(ctx, clients, req, opts, func(resp *floev1.SubscribeResponse) error {
		for _, r := range resp.GetRecords() {
			got[resp.GetPartition()] = append(got[resp.GetPartition()], r.GetOffset())
		}
		if int64(len(got[0])) >= n && int64(len(got[1])) >= n {
			return client.ErrStop
		}
		return nil
	})
	if err != nil {
		t.Fatalf("SubscribeResume: %v", err)
	}
	for _, p := range []int32{0, 1} {
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i)
		}
		if !slices.Equal(got[p], want) {
			t.Fatalf("partition %d: offsets %v, want 0..%d once each", p, got[p], n-1)
		}
	}
}

func TestSubscribeResumeFailsOverWithoutGapOrDuplicate(t *testing.T) {
	a := &fakeLog{n: 20, failAfter: 3, failCode: codes.Unavailable}
	b := &fakeLog{n: 20, failAfter: 2, failCode: codes.Unknown, rewind: true}
	ca, cb := startFake(t, a), startFake(t, b)
	var retried []string
	var waits []time.Duration
	collect(t, []*client.Client{ca, cb}, 20, client.ResumeOptions{
		MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		OnRetry: func(addr string, err error, wait time.Duration) {
			retried = append(retried, addr)
			waits = append(waits, wait)
		},
	})
	if want := []string{ca.Addr(), cb.Addr()}; !slices.Equal(retried, want) {
		t.Fatalf("retries through %v, want %v (one failure each, failing over)", retried, want)
	}
	// The second subscription (on b) resumes after the records a sent.
	if len(b.requests) == 0 || b.requests[0][0] == 0 || b.requests[0][1] == 0 {
		t.Fatalf("b was asked for offsets %v, want the offsets after what a delivered", b.requests)
	}
	if !slices.Equal(waits, []time.Duration{time.Millisecond, time.Millisecond}) {
		// records arrived between the failures: the backoff was reset.
		t.Fatalf("waits %v, want the minimum backoff after progress", waits)
	}
}

func TestSubscribeResumeBacksOffWhenNothingArrives(t *testing.T) {
	a := &fakeLog{n: 5, failAfter: 0, failCode: codes.Unavailable}
	b := &fakeLog{n: 5, failAfter: 0, failCode: codes.Unavailable}
	ca, cb := startFake(t, a), startFake(t, b)
	var waits []time.Duration
	collect(t, []*client.Client{ca, cb}, 5, client.ResumeOptions{
		MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
		OnRetry: func(_ string, _ error, wait time.Duration) { waits = append(waits, wait) },
	})
	if !slices.Equal(waits, []time.Duration{time.Millisecond, 2 * time.Millisecond}) {
		t.Fatalf("waits %v, want 1ms then 2ms (doubling without progress)", waits)
	}
}

func TestSubscribeResumeStopsOnNonRetriable(t *testing.T) {
	a := &fakeLog{n: 5, failAfter: 1, failCode: codes.OutOfRange}
	ca := startFake(t, a)
	retries := 0
	req := &floev1.SubscribeRequest{Topic: "t", Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}}
	opts := client.ResumeOptions{OnRetry: func(string, error, time.Duration) { retries++ }}
	err := client.SubscribeResume(context.Background(), []*client.Client{ca}, req, opts,
		func(*floev1.SubscribeResponse) error { return nil })
	if status.Code(err) != codes.OutOfRange || retries != 0 {
		t.Fatalf("err %v after %d retries, want OutOfRange at once", err, retries)
	}
	req.Topic = "missing"
	err = client.SubscribeResume(context.Background(), []*client.Client{ca}, req, opts,
		func(*floev1.SubscribeResponse) error { return nil })
	if status.Code(err) != codes.NotFound || retries != 0 {
		t.Fatalf("err %v after %d retries, want NotFound at once", err, retries)
	}
	// The callback's own error ends it, as is.
	mine := errors.New("mine")
	err = client.SubscribeResume(context.Background(), []*client.Client{startFake(t, &fakeLog{n: 5})}, &floev1.SubscribeRequest{Topic: "t",
		Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}}, opts,
		func(*floev1.SubscribeResponse) error { return mine })
	if !errors.Is(err, mine) {
		t.Fatalf("callback error came back as %v", err)
	}
	// Cancellation while following ends it with the context's error.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = client.SubscribeResume(ctx, []*client.Client{startFake(t, &fakeLog{n: 1})}, &floev1.SubscribeRequest{Topic: "t"}, opts,
		func(*floev1.SubscribeResponse) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled follow returned %v", err)
	}
}
