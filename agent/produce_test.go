package agent_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

func emptyRecords(n int) []*floev1.Record {
	recs := make([]*floev1.Record, n)
	for i := range recs {
		recs[i] = &floev1.Record{}
	}
	return recs
}

// Empty records count their framing: the request limit bounds their
// number, to the record, and a refusal names the limit.
func TestEmptyRecordsCountAgainstRequestLimit(t *testing.T) {
	const limit = 64 << 10
	s := startGuarded(t, guardedConfig{agent: func(a *agent.Config, _ *batcher.Config) {
		a.MaxRecordBytes = 16 << 10
		a.MaxRequestBytes = limit
	}})
	s.createTopic(t, "t", 1)
	ctx := context.Background()
	fits := limit / agent.RecordOverhead
	p := int32(0)
	resp, err := s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: emptyRecords(fits)})
	if err != nil || len(resp.GetOffsets()) != fits || resp.GetOffsets()[fits-1] != int64(fits-1) {
		t.Fatalf("%d empty records (%d bytes counted): %v", fits, fits*agent.RecordOverhead, err)
	}
	_, err = s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: emptyRecords(fits + 1)})
	wantStatus(t, "one empty record more", err, codes.InvalidArgument, agent.ReasonRequestTooLarge, fmt.Sprint(limit), "split it")
	if md := errorInfo(err).GetMetadata(); md["max_request_bytes"] != fmt.Sprint(limit) {
		t.Fatalf("ErrorInfo metadata %v, want max_request_bytes %d", md, limit)
	}
	// Headers count theirs too.
	recs := emptyRecords(fits - 1)
	headers := (limit-(fits-1)*agent.RecordOverhead)/agent.HeaderOverhead + 1
	for range headers {
		recs[1].Headers = append(recs[1].Headers, &floev1.Header{})
	}
	_, err = s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: recs})
	wantStatus(t, "empty headers", err, codes.InvalidArgument, agent.ReasonRequestTooLarge)
}

// 200,000 empty records, a few hundred KB on the wire, are refused by the
// default limits instead of being taken as a zero-byte request.
func TestManyEmptyRecordsRefusedByDefaultLimits(t *testing.T) {
	s := startGuarded(t, guardedConfig{})
	s.createTopic(t, "t", 1)
	recs := emptyRecords(200_000)
	if n := proto.Size(&floev1.ProduceRequest{Topic: "t", Records: recs}); n >= agent.DefaultConfig().MaxRequestBytes {
		t.Fatalf("test premise: %d bytes on the wire", n)
	}
	_, err := s.log.Produce(context.Background(), &floev1.ProduceRequest{Topic: "t", Records: recs})
	wantStatus(t, "200000 empty records", err, codes.InvalidArgument, agent.ReasonRequestTooLarge, fmt.Sprint(agent.DefaultConfig().MaxRequestBytes))
}

func TestRecordAtTheLimit(t *testing.T) {
	const limit = 1000
	s := startGuarded(t, guardedConfig{agent: func(a *agent.Config, _ *batcher.Config) {
		a.MaxRecordBytes = limit
		a.MaxRequestBytes = limit // one record at the limit still makes a request
	}})
	s.createTopic(t, "t", 1)
	ctx := context.Background()
	p := int32(0)
	produce := func(r *floev1.Record) error {
		_, err := s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: []*floev1.Record{r}})
		return err
	}
	if err := produce(&floev1.Record{Value: make([]byte, limit)}); err != nil {
		t.Fatalf("value at the limit: %v", err)
	}
	// The header counts HeaderOverhead (10) besides its key and value.
	split := &floev1.Record{Key: make([]byte, 400), Value: make([]byte, 500), Headers: []*floev1.Header{{Key: "h", Value: make([]byte, 89)}}}
	if err := produce(split); err != nil {
		t.Fatalf("key, value and header at the limit: %v", err)
	}
	split.Headers[0].Value = append(split.Headers[0].Value, 0)
	err := produce(split)
	wantStatus(t, "one byte over", err, codes.InvalidArgument, agent.ReasonRecordTooLarge, "1001 bytes", fmt.Sprint(limit))
	err = produce(&floev1.Record{Value: make([]byte, limit+1)})
	wantStatus(t, "value one byte over", err, codes.InvalidArgument, agent.ReasonRecordTooLarge)
	// Two records at the limit are over the request limit.
	_, err = s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p,
		Records: []*floev1.Record{{Value: make([]byte, limit)}, {Value: make([]byte, limit)}}})
	wantStatus(t, "two records at the limit", err, codes.InvalidArgument, agent.ReasonRequestTooLarge)
}

func TestNoRecordsIsInvalidArgument(t *testing.T) {
	s := startGuarded(t, guardedConfig{})
	s.createTopic(t, "t", 1)
	ctx := context.Background()
	_, err := s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t"})
	wantStatus(t, "no records", err, codes.InvalidArgument, "", "no records")
	stream, err := s.log.ProduceStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&floev1.ProduceStreamRequest{RequestId: 7}); err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil || r.GetRequestId() != 7 || codes.Code(r.GetErrorCode()) != codes.InvalidArgument || !strings.Contains(r.GetErrorMessage(), "no records") {
		t.Fatalf("stream request without records: %v %v", r, err)
	}
	_ = stream.CloseSend()
}

// A request longer on the wire than the request limit (plus a margin) is
// refused without being decoded, with InvalidArgument naming the limit,
// not gRPC's ResourceExhausted ("retry later"); in a produce stream only
// that request is refused. Only past gRPC's own, higher limit
// (MaxRecvMsgBytes) does gRPC answer ResourceExhausted itself.
func TestOversizeRequestIsInvalidArgument(t *testing.T) {
	const limit = 128 << 10
	cfg := func(a *agent.Config, _ *batcher.Config) {
		a.MaxRecordBytes = 64 << 10
		a.MaxRequestBytes = limit
	}
	s := startGuarded(t, guardedConfig{agent: cfg})
	s.createTopic(t, "t", 1)
	ctx := context.Background()
	acfg := agent.DefaultConfig()
	cfg(&acfg, nil)
	records := func(n int) []*floev1.Record {
		var recs []*floev1.Record
		for range n {
			recs = append(recs, &floev1.Record{Value: make([]byte, 60<<10)})
		}
		return recs
	}
	req := &floev1.ProduceRequest{Topic: "t", Records: records(4)}
	if n := proto.Size(req); n <= limit+64<<10 || n >= acfg.MaxRecvMsgBytes() {
		t.Fatalf("test premise: %d bytes on the wire, limits %d and %d", n, limit, acfg.MaxRecvMsgBytes())
	}
	_, err := s.log.Produce(ctx, req)
	wantStatus(t, "unary", err, codes.InvalidArgument, agent.ReasonRequestTooLarge, fmt.Sprint(limit), "split it")

	stream, err := s.log.ProduceStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := int32(0)
	for i, r := range []*floev1.ProduceRequest{req, {Topic: "t", Partition: &p, Records: records(1)}} {
		if err := stream.Send(&floev1.ProduceStreamRequest{RequestId: uint64(i + 1), Request: r}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[uint64]*floev1.ProduceStreamResponse{}
	for range 2 {
		r, err := stream.Recv()
		if err != nil {
			t.Fatalf("the stream broke: %v", err)
		}
		got[r.GetRequestId()] = r
	}
	if r := got[1]; codes.Code(r.GetErrorCode()) != codes.InvalidArgument || !strings.Contains(r.GetErrorMessage(), fmt.Sprint(limit)) {
		t.Fatalf("oversize stream request: %v", r)
	}
	if r := got[2]; r.GetErrorCode() != 0 || len(r.GetResponse().GetOffsets()) != 1 {
		t.Fatalf("the request after it: %v", r)
	}
	_ = stream.CloseSend()

	_, err = s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Records: records(acfg.MaxRecvMsgBytes()/(60<<10) + 1)})
	wantStatus(t, "past gRPC's own limit", err, codes.ResourceExhausted, "")
}

// Producer ids are issued from 1 by InitProducer: the agent refuses others
// before they reach the batcher, and the store's refusal of an id it never
// issued reaches the client as UNKNOWN_PRODUCER_ID.
func TestProducerIDNeverIssued(t *testing.T) {
	s := startGuarded(t, guardedConfig{committer: func(c batcher.Committer) batcher.Committer {
		return refuseProducers{c}
	}})
	s.createTopic(t, "t", 1)
	ctx := context.Background()
	p := int32(0)
	req := func(id int64, epoch int32) *floev1.ProduceRequest {
		return &floev1.ProduceRequest{Topic: "t", Partition: &p, ProducerId: &id, ProducerEpoch: epoch,
			Records: []*floev1.Record{{Value: []byte("x")}}}
	}
	for _, id := range []int64{0, -1} {
		_, err := s.log.Produce(ctx, req(id, 0))
		wantStatus(t, fmt.Sprintf("producer id %d", id), err, codes.FailedPrecondition, agent.ReasonUnknownProducer, "InitProducer")
	}
	_, err := s.log.Produce(ctx, req(1, -1))
	wantStatus(t, "negative epoch", err, codes.InvalidArgument, "", "epoch -1")
	_, err = s.log.Produce(ctx, req(999, 0))
	wantStatus(t, "id the store never issued", err, codes.FailedPrecondition, agent.ReasonUnknownProducer, "InitProducer")
}

// refuseProducers answers every idempotent batch as the metadata store
// answers a producer id it never issued.
type refuseProducers struct{ batcher.Committer }

func (c refuseProducers) CommitFiles(ctx context.Context, files []metadata.FileCommit) ([][]metadata.BatchResult, error) {
	out := make([][]metadata.BatchResult, len(files))
	for i, f := range files {
		out[i] = make([]metadata.BatchResult, len(f.Batches))
		for j, b := range f.Batches {
			if b.ProducerID < 0 {
				return c.Committer.CommitFiles(ctx, files)
			}
			out[i][j].Err = metadata.ErrUnknownProducer
		}
	}
	return out, nil
}

// loseAnswers commits the files and then loses the answer, every time.
type loseAnswers struct{ batcher.Committer }

func (c loseAnswers) CommitFiles(ctx context.Context, files []metadata.FileCommit) ([][]metadata.BatchResult, error) {
	if _, err := c.Committer.CommitFiles(ctx, files); err != nil {
		return nil, err
	}
	return nil, errors.New("read tcp 10.0.0.1:5432: connection reset by peer (user=floe dbname=floe)")
}

// When the commit's outcome stays unknown, the producer is told so, with a
// distinct reason, never a plain retriable Unavailable; a file that failed
// to upload is Unavailable, retry safely.
func TestOutcomeUnknownAndNotCommitted(t *testing.T) {
	s := startGuarded(t, guardedConfig{committer: func(c batcher.Committer) batcher.Committer { return loseAnswers{c} }})
	s.createTopic(t, "t", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	p := int32(0)
	_, err := s.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: []*floev1.Record{{Value: []byte("x")}}})
	wantStatus(t, "lost answer", err, codes.Unknown, agent.ReasonOutcomeUnknown, "may or may not be committed", "idempotent producer's retry is safe", "request id")
	if strings.Contains(status.Convert(err).Message(), "dbname") {
		t.Fatalf("message leaks the cause: %q", status.Convert(err).Message())
	}
	id := errorInfo(err).GetMetadata()["request_id"]
	if id == "" || !strings.Contains(s.logs.String(), id) || !strings.Contains(s.logs.String(), "connection reset by peer") {
		t.Fatalf("request id %q and cause not logged:\n%s", id, s.logs.String())
	}

	s2 := startGuarded(t, guardedConfig{})
	s2.createTopic(t, "t", 1)
	s2.store.Set(objectstore.FaultConfig{ErrorRate: 1, Operations: []string{objectstore.OpPut}})
	_, err = s2.log.Produce(ctx, &floev1.ProduceRequest{Topic: "t", Partition: &p, Records: []*floev1.Record{{Value: []byte("x")}}})
	wantStatus(t, "failed upload", err, codes.Unavailable, agent.ReasonNotCommitted, "not committed", "retry safely", "request id")
}
