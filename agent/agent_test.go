package agent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/agenttest"
	"github.com/floe-broker/floe/internal/testenv"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

func TestMain(m *testing.M) { testenv.Main(m, testenv.VerifyNoLeaks()) }

type harness struct {
	c       *client.Client
	store   *objectstore.Faulty
	objects objectstore.Store // the store behind the faults (backend_test.go)
	meta    metadata.Store
}

func start(t *testing.T, mutate func(*agent.Config, *batcher.Config)) *harness {
	t.Helper()
	meta := harnessMeta(context.Background(), t)
	t.Cleanup(func() { meta.Close() }) // after the agent's stop (cleanups run last first)
	objects := harnessObjects(t)
	store := objectstore.WithFaults(objects, objectstore.FaultConfig{})
	a := agenttest.Start(t, meta, store, harnessOptions(mutate))
	return &harness{c: a.Client, store: store, objects: objects, meta: meta}
}

// harnessOptions are agenttest's options with the agent tests' timings
// (a 5 ms linger, a 200 ms poll), then mutate's changes.
func harnessOptions(mutate func(*agent.Config, *batcher.Config)) agenttest.Options {
	o := agenttest.Default()
	o.Batcher.Linger = 5 * time.Millisecond
	o.Agent.PollInterval = 200 * time.Millisecond
	if mutate != nil {
		mutate(&o.Agent, &o.Batcher)
	}
	return o
}

func code(err error) codes.Code { return status.Code(err) }

func TestProduceFetchRoundTrip(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "orders", 3, map[string]string{"retention.ms": "1000"}); err != nil {
		t.Fatal(err)
	}
	var recs []*floev1.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, &floev1.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i)),
			Headers: []*floev1.Header{{Key: "h", Value: []byte("x")}}, TimestampMs: 1700000000000 + int64(i)})
	}
	resp, err := h.c.Produce(ctx, "orders", 1, recs...)
	if err != nil {
		t.Fatal(err)
	}
	for i, off := range resp.GetOffsets() {
		if off != int64(i) || resp.GetPartitions()[i] != 1 {
			t.Fatalf("record %d at %d/%d", i, resp.GetPartitions()[i], off)
		}
	}
	f, err := h.c.Fetch(ctx, "orders", 1, 3, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.GetRecords()) != 7 || f.GetHighWatermark() != 10 || f.GetNextOffset() != 10 {
		t.Fatalf("fetch from 3: %d records, hw %d, next %d", len(f.GetRecords()), f.GetHighWatermark(), f.GetNextOffset())
	}
	r := f.GetRecords()[0]
	if r.GetOffset() != 3 || string(r.GetKey()) != "k3" || string(r.GetValue()) != "v3" || r.GetTimestampMs() != 1700000000003 ||
		len(r.GetHeaders()) != 1 || r.GetHeaders()[0].GetKey() != "h" {
		t.Fatalf("record 3 came back as %v", r)
	}
	d, err := h.c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "orders"})
	if err != nil || d.GetPartitions()[1].GetHighWatermark() != 10 || d.GetTopic().GetConfig()["retention.ms"] != "1000" {
		t.Fatalf("describe: %v %v", d, err)
	}
}

func TestKeyPartitioningMatchesKafka(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "keys", 7, nil); err != nil {
		t.Fatal(err)
	}
	var recs []*floev1.Record
	for i := 0; i < 50; i++ {
		recs = append(recs, client.Value([]byte(fmt.Sprintf("key-%d", i)), []byte("v")))
	}
	resp, err := h.c.Produce(ctx, "keys", -1, recs...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if want := agent.KafkaPartition(r.GetKey(), 7); resp.GetPartitions()[i] != want {
			t.Fatalf("key %q went to %d, kafka would pick %d", r.GetKey(), resp.GetPartitions()[i], want)
		}
	}
}

func TestErrorCodes(t *testing.T) {
	h := start(t, func(a *agent.Config, _ *batcher.Config) { a.MaxRecordBytes = 100 })
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"bad name", func() error { _, err := h.c.CreateTopic(ctx, "bad name!", 1, nil); return err }(), codes.InvalidArgument},
		{"zero partitions", func() error { _, err := h.c.CreateTopic(ctx, "z", 0, nil); return err }(), codes.InvalidArgument},
		{"exists", func() error { _, err := h.c.CreateTopic(ctx, "t", 1, nil); return err }(), codes.AlreadyExists},
		{"unknown topic produce", func() error { _, err := h.c.Produce(ctx, "nope", 0, client.Value(nil, []byte("x"))); return err }(), codes.NotFound},
		{"unknown partition", func() error { _, err := h.c.Produce(ctx, "t", 5, client.Value(nil, []byte("x"))); return err }(), codes.NotFound},
		{"oversize record", func() error { _, err := h.c.Produce(ctx, "t", 0, client.Value(nil, make([]byte, 200))); return err }(), codes.InvalidArgument},
		{"no records", func() error { _, err := h.c.Produce(ctx, "t", 0); return err }(), codes.InvalidArgument},
		{"fetch out of range", func() error { _, err := h.c.Fetch(ctx, "t", 0, 5, 0, 0); return err }(), codes.OutOfRange},
		{"fetch unknown topic", func() error { _, err := h.c.Fetch(ctx, "nope", 0, 0, 0, 0); return err }(), codes.NotFound},
		{"describe unknown", func() error {
			_, err := h.c.Topics.DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "nope"})
			return err
		}(), codes.NotFound},
	}
	for _, c := range cases {
		if code(c.err) != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.err, c.want)
		}
	}
}

func TestStoreFailureIsUnavailableAndLosesNothing(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	h.store.Set(objectstore.FaultConfig{ErrorRate: 1, Operations: []string{"put"}})
	_, err := h.c.Produce(ctx, "t", 0, client.Value(nil, []byte("lost")))
	if code(err) != codes.Unavailable {
		t.Fatalf("produce with a failing store: %v, want Unavailable", err)
	}
	h.store.Set(objectstore.FaultConfig{})
	resp, err := h.c.Produce(ctx, "t", 0, client.Value(nil, []byte("kept")))
	if err != nil || resp.GetOffsets()[0] != 0 {
		t.Fatalf("after recovery: %v %v", resp, err)
	}
	f, err := h.c.Fetch(ctx, "t", 0, 0, 0, 0)
	if err != nil || len(f.GetRecords()) != 1 || string(f.GetRecords()[0].GetValue()) != "kept" {
		t.Fatalf("fetch: %v %v", f, err)
	}
}

func TestLongPollWakesOnCommit(t *testing.T) {
	h := start(t, func(a *agent.Config, _ *batcher.Config) { a.PollInterval = time.Minute })
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	done := make(chan *floev1.FetchResponse, 1)
	go func() {
		f, err := h.c.Fetch(ctx, "t", 0, 0, 0, 20000)
		if err != nil {
			t.Error(err)
		}
		done <- f
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if _, err := h.c.Produce(ctx, "t", 0, client.Value(nil, []byte("wake"))); err != nil {
		t.Fatal(err)
	}
	select {
	case f := <-done:
		if len(f.GetRecords()) != 1 {
			t.Fatalf("long poll returned %d records", len(f.GetRecords()))
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("long poll woke after %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("long poll did not wake on commit")
	}
	// A long poll with nothing to read returns empty after max wait.
	f, err := h.c.Fetch(ctx, "t", 0, 1, 0, 50)
	if err != nil || len(f.GetRecords()) != 0 || f.GetNextOffset() != 1 {
		t.Fatalf("empty long poll: %v %v", f, err)
	}
}

func TestSubscribeFromEarliestAndLive(t *testing.T) {
	h := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := h.c.CreateTopic(ctx, "t", 3, nil); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		if _, err := h.c.Produce(ctx, "t", p, client.Value(nil, []byte(fmt.Sprintf("old-%d", p)))); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan *floev1.Record, 100)
	errc := make(chan error, 1)
	go func() {
		errc <- h.c.Subscribe(ctx, &floev1.SubscribeRequest{Topic: "t",
			Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}},
			func(r *floev1.SubscribeResponse) error {
				for _, rec := range r.GetRecords() {
					got <- rec
				}
				return nil
			})
	}()
	seen := map[string]bool{}
	for len(seen) < 3 {
		select {
		case r := <-got:
			seen[string(r.GetValue())] = true
		case <-ctx.Done():
			t.Fatalf("subscription saw %v", seen)
		}
	}
	if _, err := h.c.Produce(ctx, "t", 2, client.Value(nil, []byte("new"))); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if string(r.GetValue()) != "new" || r.GetOffset() != 1 || r.GetPartition() != 2 {
			t.Fatalf("live record: %v", r)
		}
	case <-ctx.Done():
		t.Fatal("live record not pushed")
	}
	cancel()
	<-errc
}

func TestProduceStreamKeepsOrder(t *testing.T) {
	h := start(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	stream, err := h.c.Log.ProduceStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	p := int32(0)
	go func() {
		for i := 0; i < n; i++ {
			if err := stream.Send(&floev1.ProduceStreamRequest{RequestId: uint64(i), Request: &floev1.ProduceRequest{
				Topic: "t", Partition: &p, Records: []*floev1.Record{client.Value(nil, []byte(fmt.Sprint(i)))}}}); err != nil {
				t.Error(err)
				return
			}
		}
		_ = stream.CloseSend()
	}()
	offsets := map[uint64]int64{}
	for len(offsets) < n {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetErrorCode() != 0 {
			t.Fatalf("request %d failed: %s", resp.GetRequestId(), resp.GetErrorMessage())
		}
		offsets[resp.GetRequestId()] = resp.GetResponse().GetOffsets()[0]
	}
	for i := uint64(0); i < n; i++ {
		if offsets[i] != int64(i) {
			t.Fatalf("request %d got offset %d: stream order not kept", i, offsets[i])
		}
	}
}

func TestIdempotentRetryGetsOriginalOffsets(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	ip, err := h.c.Log.InitProducer(ctx, &floev1.InitProducerRequest{})
	if err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	req := func(seq int32, vals ...string) *floev1.ProduceRequest {
		r := &floev1.ProduceRequest{Topic: "t", Partition: &p, ProducerId: &ip.ProducerId, ProducerEpoch: ip.ProducerEpoch, BaseSequence: seq}
		for _, v := range vals {
			r.Records = append(r.Records, client.Value(nil, []byte(v)))
		}
		return r
	}
	first, err := h.c.Log.Produce(ctx, req(0, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	retry, err := h.c.Log.Produce(ctx, req(0, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if !retry.GetDuplicate() || retry.GetOffsets()[0] != first.GetOffsets()[0] {
		t.Fatalf("retry got %v, first %v", retry, first)
	}
	if _, err := h.c.Log.Produce(ctx, req(5, "gap")); code(err) != codes.FailedPrecondition {
		t.Fatalf("out of order sequence: %v", err)
	}
	f, err := h.c.Fetch(ctx, "t", 0, 0, 0, 0)
	if err != nil || len(f.GetRecords()) != 2 {
		t.Fatalf("log holds %d records, want 2 (no copy of the retry): %v", len(f.GetRecords()), err)
	}
}

func TestTailReadsCostNoGet(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Produce(ctx, "t", 0, client.Value(nil, []byte("x"))); err != nil {
		t.Fatal(err)
	}
	h.store.Set(objectstore.FaultConfig{ErrorRate: 1, Operations: []string{"get"}})
	if _, err := h.c.Fetch(ctx, "t", 0, 0, 0, 0); err != nil {
		t.Fatalf("tail fetch went to the store: %v", err)
	}
}

func TestBackpressureIsResourceExhausted(t *testing.T) {
	h := start(t, func(a *agent.Config, b *batcher.Config) {
		a.MaxBackpressureWait = 100 * time.Millisecond
		a.MaxRecordBytes = 32 << 10
		a.MaxRequestBytes = 32 << 10
		b.MaxFileBytes = 64 << 10
		b.MaxBufferedBytes = 64 << 10
	})
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	h.store.Set(objectstore.FaultConfig{Latency: time.Second, Operations: []string{objectstore.OpPut}})
	var wg sync.WaitGroup
	codesSeen := make(chan codes.Code, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := h.c.Produce(ctx, "t", 0, client.Value(nil, make([]byte, 30<<10)))
			codesSeen <- code(err)
		}()
	}
	wg.Wait()
	close(codesSeen)
	var ok, exhausted int
	for c := range codesSeen {
		switch c {
		case codes.OK:
			ok++
		case codes.ResourceExhausted:
			exhausted++
		default:
			t.Errorf("unexpected code %v", c)
		}
	}
	if exhausted == 0 || ok == 0 {
		t.Fatalf("%d acknowledged, %d refused with ResourceExhausted: want both", ok, exhausted)
	}
	h.store.Set(objectstore.FaultConfig{})
	f, err := h.c.Fetch(ctx, "t", 0, 0, 0, 0)
	if err != nil || len(f.GetRecords()) != ok {
		t.Fatalf("log holds %d records, %d were acknowledged: %v", len(f.GetRecords()), ok, err)
	}
}

func TestOutOfRangeCarriesTheRange(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Produce(ctx, "t", 0, client.Value(nil, []byte("a")), client.Value(nil, []byte("b"))); err != nil {
		t.Fatal(err)
	}
	_, err := h.c.Fetch(ctx, "t", 0, 7, 0, 0)
	st := status.Convert(err)
	if st.Code() != codes.OutOfRange {
		t.Fatalf("fetch past the end: %v", err)
	}
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			info = i
		}
	}
	if info == nil || info.GetMetadata()["log_start_offset"] != "0" || info.GetMetadata()["high_watermark"] != "2" {
		t.Fatalf("OutOfRange details: %v", st.Details())
	}
}

// Headers count towards a fetch's byte budget.
func TestFetchBudgetCountsHeaders(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	var recs []*floev1.Record
	for i := 0; i < 6; i++ {
		recs = append(recs, &floev1.Record{Value: []byte("v"), Headers: []*floev1.Header{{Key: "big", Value: make([]byte, 300<<10)}}})
	}
	if _, err := h.c.Produce(ctx, "t", 0, recs...); err != nil {
		t.Fatal(err)
	}
	f, err := h.c.Fetch(ctx, "t", 0, 0, 700<<10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.GetRecords()); n != 2 {
		t.Fatalf("fetch of 700 KiB returned %d records of 300 KiB headers, want 2", n)
	}
}

// A topic deleted and re-created under the same name is produced to and
// read from as the new topic, not the cached old one.
func TestRecreatedTopic(t *testing.T) {
	h := start(t, nil)
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Produce(ctx, "t", 0, client.Value(nil, []byte("old"))); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.Topics.DeleteTopic(ctx, &floev1.DeleteTopicRequest{Name: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.CreateTopic(ctx, "t", 2, nil); err != nil {
		t.Fatal(err)
	}
	resp, err := h.c.Produce(ctx, "t", 1, client.Value(nil, []byte("new")))
	if err != nil || resp.GetOffsets()[0] != 0 {
		t.Fatalf("produce to the re-created topic: %v %v", resp, err)
	}
	f, err := h.c.Fetch(ctx, "t", 0, 0, 0, 0)
	if err != nil || len(f.GetRecords()) != 0 {
		t.Fatalf("re-created topic shows old records: %v %v", f, err)
	}
}

// Reads inside a run of many Kafka batches: from its middle, and with a
// budget spent before its end.
func TestFetchInsideARun(t *testing.T) {
	h := start(t, func(_ *agent.Config, b *batcher.Config) { b.Linger = 300 * time.Millisecond })
	ctx := context.Background()
	if _, err := h.c.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	stream, err := h.c.Log.ProduceStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	for i := 0; i < 20; i++ {
		if err := stream.Send(&floev1.ProduceStreamRequest{RequestId: uint64(i), Request: &floev1.ProduceRequest{
			Topic: "t", Partition: &p, Records: []*floev1.Record{client.Value(nil, []byte(fmt.Sprint("r", i)))}}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 20; i++ {
		if r, err := stream.Recv(); err != nil || r.GetErrorCode() != 0 {
			t.Fatalf("produce: %v %v", r, err)
		}
	}
	_ = stream.CloseSend()
	one, err := h.c.Fetch(ctx, "t", 0, 7, 1, 0)
	if err != nil || len(one.GetRecords()) != 1 || string(one.GetRecords()[0].GetValue()) != "r7" || one.GetNextOffset() != 8 {
		t.Fatalf("fetch of one record at 7: %v %v", one, err)
	}
	rest, err := h.c.Fetch(ctx, "t", 0, 8, 0, 0)
	if err != nil || len(rest.GetRecords()) != 12 {
		t.Fatalf("fetch from 8: %v %v", rest, err)
	}
	for i, r := range rest.GetRecords() {
		if r.GetOffset() != int64(8+i) || string(r.GetValue()) != fmt.Sprint("r", 8+i) {
			t.Fatalf("record %d: %v", i, r)
		}
	}
}
