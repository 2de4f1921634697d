package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/client"
)

// fakeSeq is a LogService that sequences like floe: per partition, an
// idempotent producer's batch with the next sequence is appended, a repeat
// of one of its last five batches gets the first offsets back, anything
// else is out of order. Faults by request number (counted across streams):
// drop commits a request, then ends its stream without answering anything
// pending; refuse answers Unavailable without committing. Stream answers
// are held until window requests are unanswered (or 10 ms pass).
type fakeSeq struct {
	floev1.UnimplementedLogServiceServer
	window  int
	drop    map[int]bool
	refuse  map[int]bool
	unknown map[int]bool // commit, then answer Unknown (outcome unknown)
	invalid map[int]bool // refuse with InvalidArgument, nothing committed

	mu          sync.Mutex // protects the fields below
	n           int
	log         map[int32][]string
	next        map[int32]int32
	recent      map[int32][][2]int64 // partition -> (base sequence, base offset) of recent batches
	maxUnacked  int
	initialised bool
}

func (f *fakeSeq) InitProducer(context.Context, *floev1.InitProducerRequest) (*floev1.InitProducerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.initialised = true
	return &floev1.InitProducerResponse{ProducerId: 7}, nil
}

// apply sequences one request; drop reports that its stream must end.
func (f *fakeSeq) apply(req *floev1.ProduceRequest) (resp *floev1.ProduceResponse, err error, drop bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.n
	f.n++
	if f.refuse[n] {
		return nil, status.Error(codes.Unavailable, "refused"), false
	}
	if f.invalid[n] {
		return nil, status.Error(codes.InvalidArgument, "bad record"), false
	}
	p := req.GetPartition()
	seq := req.GetBaseSequence()
	resp = &floev1.ProduceResponse{}
	if req.ProducerId == nil { // a plain producer: appended, no sequence (TestFakeSeqFollowsTheAgent)
		base := int64(len(f.log[p]))
		for i, r := range req.GetRecords() {
			f.log[p] = append(f.log[p], string(r.GetValue()))
			resp.Offsets = append(resp.Offsets, base+int64(i))
			resp.Partitions = append(resp.Partitions, p)
		}
		if f.unknown[n] {
			return nil, status.Error(codes.Unknown, "outcome unknown"), false
		}
		return resp, nil, f.drop[n]
	}
	var base int64 = -1
	for _, r := range f.recent[p] {
		if int32(r[0]) == seq {
			base = r[1]
		}
	}
	if base < 0 {
		if seq != f.next[p] {
			return nil, status.Error(codes.FailedPrecondition, "out of order sequence"), false
		}
		base = int64(len(f.log[p]))
		for _, r := range req.GetRecords() {
			f.log[p] = append(f.log[p], string(r.GetValue()))
		}
		f.next[p] += int32(len(req.GetRecords()))
		f.recent[p] = append(f.recent[p], [2]int64{int64(seq), base})
		if len(f.recent[p]) > 5 {
			f.recent[p] = f.recent[p][1:]
		}
	}
	for i := range req.GetRecords() {
		resp.Offsets = append(resp.Offsets, base+int64(i))
		resp.Partitions = append(resp.Partitions, p)
	}
	if f.unknown[n] {
		return nil, status.Error(codes.Unknown, "outcome unknown"), false
	}
	return resp, nil, f.drop[n]
}

func (f *fakeSeq) Produce(_ context.Context, req *floev1.ProduceRequest) (*floev1.ProduceResponse, error) {
	resp, err, _ := f.apply(req)
	return resp, err
}

func (f *fakeSeq) ProduceStream(stream floev1.LogService_ProduceStreamServer) error {
	ctx := stream.Context()
	msgs := make(chan *floev1.ProduceStreamRequest)
	go func() {
		for {
			m, err := stream.Recv()
			if err != nil {
				close(msgs)
				return
			}
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}()
	var held []*floev1.ProduceStreamResponse
	answer := func() error {
		for _, r := range held {
			if err := stream.Send(r); err != nil {
				return err
			}
		}
		held = held[:0]
		return nil
	}
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				return answer()
			}
			resp, err, drop := f.apply(m.GetRequest())
			if drop {
				return status.Error(codes.Unavailable, "connection lost") // the answers held are lost
			}
			out := &floev1.ProduceStreamResponse{RequestId: m.GetRequestId(), Response: resp}
			if err != nil {
				st, _ := status.FromError(err)
				out.ErrorCode, out.ErrorMessage = int32(st.Code()), st.Message()
			}
			held = append(held, out)
			f.mu.Lock()
			f.maxUnacked = max(f.maxUnacked, len(held))
			f.mu.Unlock()
			if len(held) >= f.window {
				if err := answer(); err != nil {
					return err
				}
			}
		case <-time.After(10 * time.Millisecond):
			if err := answer(); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func TestProducerPipelinesAndRetriesWithoutDuplicates(t *testing.T) {
	f := &fakeSeq{window: 4, drop: map[int]bool{10: true, 41: true}, refuse: map[int]bool{25: true},
		log: map[int32][]string{}, next: map[int32]int32{}, recent: map[int32][][2]int64{}}
	c := startFakeServer(t, f)
	type result struct {
		tag  int
		resp *floev1.ProduceResponse
	}
	var results []result
	p, err := c.NewProducer(context.Background(), "t", client.ProducerOptions{
		Idempotent: true, MaxInFlight: 4, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond,
		OnResult: func(tag any, resp *floev1.ProduceResponse) { results = append(results, result{tag.(int), resp}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const sends = 60
	want := map[int32][]string{}
	for i := 0; i < sends; i++ {
		part := int32(i % 3)
		var recs []*floev1.Record
		for j := 0; j < 2; j++ {
			v := fmt.Sprintf("s%d-r%d", i, j)
			recs = append(recs, &floev1.Record{Value: []byte(v)})
			want[part] = append(want[part], v)
		}
		if err := p.Send(part, recs, i); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.initialised {
		t.Fatal("idempotent producer did not call InitProducer")
	}
	if f.n < sends+3 {
		t.Fatalf("%d requests for %d sends: the faults caused no retries", f.n, sends)
	}
	for part, vs := range want {
		if !slices.Equal(f.log[part], vs) {
			t.Fatalf("partition %d holds %v, want %v (once each, in order)", part, f.log[part], vs)
		}
	}
	if len(results) != sends {
		t.Fatalf("%d results for %d sends", len(results), sends)
	}
	for i, r := range results {
		if r.tag != i {
			t.Fatalf("result %d has tag %d: not in send order", i, r.tag)
		}
		part := int32(i % 3)
		for j, off := range r.resp.GetOffsets() {
			if got := f.log[part][off]; got != fmt.Sprintf("s%d-r%d", i, j) {
				t.Fatalf("send %d record %d answered offset %d, which holds %q", i, j, off, got)
			}
		}
	}
	if f.maxUnacked < 2 || f.maxUnacked > 4 {
		t.Fatalf("at most %d requests unanswered, want pipelining up to MaxInFlight 4", f.maxUnacked)
	}
}

func TestProducerReportsNonRetriable(t *testing.T) {
	f := &fakeSeq{window: 1, log: map[int32][]string{}, next: map[int32]int32{5: 1}, recent: map[int32][][2]int64{}}
	c := startFakeServer(t, f)
	p, err := c.NewProducer(context.Background(), "t", client.ProducerOptions{Idempotent: true, MinBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Partition 5 expects sequence 1: sequence 0 is out of order for good.
	err = p.Send(5, []*floev1.Record{{Value: []byte("x")}}, "tag-5")
	if err == nil {
		err = p.Flush()
	}
	be, ok := err.(*client.BatchError)
	if !ok || be.Tag != "tag-5" || status.Code(be.Err) != codes.FailedPrecondition {
		t.Fatalf("err %v, want a BatchError of tag-5 with FailedPrecondition", err)
	}
	if err := p.Send(-1, []*floev1.Record{{Value: []byte("x")}}, "by-key"); err == nil {
		t.Fatal("an idempotent producer accepted a send without a partition")
	}
}

// "Outcome unknown" is retried by an idempotent producer (and stored once)
// but is an error for a plain one, whose retry could store it twice.
func TestProducerOutcomeUnknown(t *testing.T) {
	for _, idem := range []bool{true, false} {
		f := &fakeSeq{window: 1, unknown: map[int]bool{1: true},
			log: map[int32][]string{}, next: map[int32]int32{}, recent: map[int32][][2]int64{}}
		c := startFakeServer(t, f)
		p, err := c.NewProducer(context.Background(), "t", client.ProducerOptions{Idempotent: idem, MinBackoff: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3 && err == nil; i++ {
			err = p.Send(0, []*floev1.Record{{Value: []byte(fmt.Sprint(i))}}, i)
		}
		if err == nil {
			err = p.Flush()
		}
		p.Close()
		f.mu.Lock()
		log := f.log[0]
		f.mu.Unlock()
		if idem && (err != nil || !slices.Equal(log, []string{"0", "1", "2"})) {
			t.Fatalf("idempotent: err %v, log %v; want 0 1 2 once each", err, log)
		}
		var be *client.BatchError
		if !idem && (!errors.As(err, &be) || be.Tag != 1 || status.Code(err) != codes.Unknown) {
			t.Fatalf("plain: err %v, want the Unknown of send 1", err)
		}
	}
}

// After a refused request, Settle waits for the requests in flight and
// reports exactly those that were stored: the refused one and the later
// ones of its partition (out of order) are failed, the others stored.
func TestProducerSettleAfterRefusal(t *testing.T) {
	f := &fakeSeq{window: 8, invalid: map[int]bool{2: true},
		log: map[int32][]string{}, next: map[int32]int32{}, recent: map[int32][][2]int64{}}
	c := startFakeServer(t, f)
	var reported []int
	p, err := c.NewProducer(context.Background(), "t", client.ProducerOptions{Idempotent: true, MinBackoff: time.Millisecond,
		OnResult: func(tag any, _ *floev1.ProduceResponse) { reported = append(reported, tag.(int)) }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sent := 0
	for i := 0; i < 8 && err == nil; i++ { // requests 0..7 to partitions 0, 1, 2, 0, 1, 2, ...
		err = p.Send(int32(i%3), []*floev1.Record{{Value: []byte(fmt.Sprint(i))}}, i)
		sent++
	}
	if err == nil {
		err = p.Flush()
	}
	var be *client.BatchError
	if !errors.As(err, &be) || be.Tag != 2 || status.Code(err) != codes.InvalidArgument {
		t.Fatalf("err %v, want the InvalidArgument of request 2", err)
	}
	failed, unknown := p.Settle()
	f.mu.Lock()
	stored := map[int]bool{}
	for _, vs := range f.log {
		for _, v := range vs {
			var n int
			fmt.Sscan(v, &n)
			stored[n] = true
		}
	}
	f.mu.Unlock()
	if len(unknown) != 0 {
		t.Errorf("unknown %v, want none (every answer came)", unknown)
	}
	seen := map[int]bool{}
	for _, r := range reported {
		seen[r] = true
		if !stored[r] {
			t.Errorf("request %d reported stored, but it is not", r)
		}
	}
	for _, tag := range failed {
		seen[tag.(int)] = true
		if stored[tag.(int)] {
			t.Errorf("request %d reported failed, but it is stored", tag)
		}
	}
	for i := 0; i < sent; i++ {
		if !seen[i] {
			t.Errorf("request %d neither reported stored nor failed", i)
		}
	}
	if !slices.Contains(failed, any(2)) || !stored[0] || !stored[1] {
		t.Errorf("failed %v, stored %v: want 2 failed, 0 and 1 stored", failed, stored)
	}
}
