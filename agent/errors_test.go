package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/objectstore"
)

type sqlStateError string

func (e sqlStateError) Error() string    { return "ERROR: something (SQLSTATE " + string(e) + ")" }
func (e sqlStateError) SQLState() string { return string(e) }

type sqliteError int

func (e sqliteError) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e sqliteError) Code() int     { return int(e) }

// Every sentinel and error kind the agent meets maps to the status a client
// can act on; only backpressure is ResourceExhausted.
func TestToStatusTable(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("agent: doing something: %w", err) }
	tooLarge := fmt.Errorf("%w: over 1024 bytes (zstd)", kbatch.ErrTooLarge)
	for _, tc := range []struct {
		name   string
		err    error
		code   codes.Code
		reason string
	}{
		{"flush ambiguous", &batcher.FlushError{Stage: "commit", Ambiguous: true, Err: errors.New("connection reset")}, codes.Unknown, ReasonOutcomeUnknown},
		{"flush ambiguous on a deadline", wrap(&batcher.FlushError{Stage: "commit", Ambiguous: true, Err: context.DeadlineExceeded}), codes.Unknown, ReasonOutcomeUnknown},
		{"flush upload", &batcher.FlushError{Stage: "upload", Err: objectstore.ErrInjected}, codes.Unavailable, ReasonNotCommitted},
		{"flush not applied", &batcher.FlushError{Stage: "commit", Err: fmt.Errorf("%w: connection refused", metadata.ErrNotApplied)}, codes.Unavailable, ReasonNotCommitted},
		{"flush invalid commit", &batcher.FlushError{Stage: "commit", Err: metadata.ErrInvalidCommit}, codes.Internal, ReasonInternal},
		{"decompression limit", wrap(&dataLossError{Err: wrap(tooLarge)}), codes.InvalidArgument, ReasonBatchTooLarge},
		{"data loss", &dataLossError{Err: fmt.Errorf("%w: bad CRC", kbatch.ErrCorrupt)}, codes.DataLoss, ReasonDataLoss},
		{"out of range", &metadata.OffsetOutOfRangeError{Offset: 9, HighWatermark: 3}, codes.OutOfRange, "OFFSET_OUT_OF_RANGE"},
		{"topic not found", wrap(metadata.ErrTopicNotFound), codes.NotFound, ""},
		{"invalid config", wrap(metadata.ErrInvalidConfig), codes.InvalidArgument, ""},
		{"invalid delete offset", wrap(metadata.ErrInvalidDeleteOffset), codes.InvalidArgument, ""},
		{"partition not found", metadata.ErrPartitionNotFound, codes.NotFound, ""},
		{"topic exists", metadata.ErrTopicExists, codes.AlreadyExists, ""},
		{"invalid topic name", metadata.ErrInvalidTopicName, codes.InvalidArgument, ""},
		{"invalid partitions", metadata.ErrInvalidPartitions, codes.InvalidArgument, ""},
		{"batch too large for a file", batcher.ErrBatchTooLarge, codes.InvalidArgument, ""},
		{"corrupt batch", kbatch.ErrCorrupt, codes.InvalidArgument, ""},
		{"unknown producer", wrap(metadata.ErrUnknownProducer), codes.FailedPrecondition, ReasonUnknownProducer},
		{"fenced", metadata.ErrProducerFenced, codes.FailedPrecondition, ReasonProducerFenced},
		{"out of order", metadata.ErrOutOfOrderSequence, codes.FailedPrecondition, ReasonOutOfOrderSequence},
		{"backpressure", batcher.ErrBackpressure, codes.ResourceExhausted, ""},
		{"batcher closed", batcher.ErrClosed, codes.Unavailable, ReasonShuttingDown},
		{"metadata closed", metadata.ErrClosed, codes.Unavailable, ReasonShuttingDown},
		{"deadline", wrap(context.DeadlineExceeded), codes.DeadlineExceeded, ""},
		{"canceled", wrap(context.Canceled), codes.Canceled, ""},
		{"object store", &objectStoreError{errors.New("s3: get k: 500 internal error")}, codes.Unavailable, ReasonStoreUnavailable},
		{"object missing", wrap(objectstore.ErrNotFound), codes.Unavailable, ReasonStoreUnavailable},
		{"object store permanent", &objectstore.PermanentError{Err: errors.New("access denied")}, codes.Unavailable, ReasonStoreUnavailable},
		{"not applied", fmt.Errorf("%w: no connection from the pool", metadata.ErrNotApplied), codes.Unavailable, ReasonStoreUnavailable},
		{"connection refused", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), codes.Unavailable, ReasonStoreUnavailable},
		{"connection reset", wrap(syscall.ECONNRESET), codes.Unavailable, ReasonStoreUnavailable},
		{"unexpected EOF", wrap(io.ErrUnexpectedEOF), codes.Unavailable, ReasonStoreUnavailable},
		{"admin shutdown 57P01", wrap(sqlStateError("57P01")), codes.Unavailable, ReasonStoreUnavailable},
		{"too many connections 53300", sqlStateError("53300"), codes.Unavailable, ReasonStoreUnavailable},
		{"serialization 40001", sqlStateError("40001"), codes.Unavailable, ReasonStoreUnavailable},
		{"connection exception 08006", sqlStateError("08006"), codes.Unavailable, ReasonStoreUnavailable},
		{"undefined column 42703", wrap(sqlStateError("42703")), codes.Internal, ReasonInternal},
		{"unique violation 23505", sqlStateError("23505"), codes.Internal, ReasonInternal},
		{"sqlite busy", sqliteError(5), codes.Unavailable, ReasonStoreUnavailable},
		{"sqlite busy snapshot", sqliteError(5 | 2<<8), codes.Unavailable, ReasonStoreUnavailable},
		{"sqlite constraint", sqliteError(19), codes.Internal, ReasonInternal},
		{"invalid commit", metadata.ErrInvalidCommit, codes.Internal, ReasonInternal},
		{"unknown", errors.New("agent: batch at 5+10 lies outside file k of 12 bytes"), codes.Internal, ReasonInternal},
		{"status passes", status.Error(codes.NotFound, "partition 3 of topic \"t\" does not exist"), codes.NotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := toStatus(tc.err)
			st := status.Convert(err)
			if st.Code() != tc.code {
				t.Fatalf("code %v (%q), want %v", st.Code(), st.Message(), tc.code)
			}
			var reason string
			for _, d := range st.Details() {
				if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == "floe" {
					reason = ei.GetReason()
				}
			}
			if reason != tc.reason {
				t.Fatalf("reason %q, want %q", reason, tc.reason)
			}
			if isServerCode(tc.code) {
				// Never the cause: it is logged by publicError.
				if strings.Contains(st.Message(), tc.err.Error()) {
					t.Fatalf("message %q holds the cause", st.Message())
				}
				var se *serverError
				if !errors.As(err, &se) || !errors.Is(se, tc.err) {
					t.Fatalf("%T does not keep the cause for the log", err)
				}
			}
		})
	}
}

func TestOutcomeUnknownMessage(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cause := &batcher.FlushError{Stage: "commit", Ambiguous: true, Err: errors.New("read tcp: connection reset by peer")}
	err := publicError(context.Background(), log, "/floe.v1.LogService/Produce", "", cause)
	st := status.Convert(err)
	for _, want := range []string{"may or may not be committed", "idempotent producer's retry is safe", "request id"} {
		if !strings.Contains(st.Message(), want) {
			t.Fatalf("message %q does not say %q", st.Message(), want)
		}
	}
	ei, _ := st.Details()[0].(*errdetails.ErrorInfo)
	id := ei.GetMetadata()["request_id"]
	if st.Code() != codes.Unknown || ei.GetReason() != ReasonOutcomeUnknown || ei.GetDomain() != "floe" || id == "" {
		t.Fatalf("status %v, ErrorInfo %v", st.Code(), ei)
	}
	if l := logs.String(); strings.Count(l, "\n") != 1 || !strings.Contains(l, id) || !strings.Contains(l, "connection reset by peer") || !strings.Contains(l, "LogService/Produce") {
		t.Fatalf("log: %q", l)
	}
	// A client error is neither changed nor logged.
	logs.Reset()
	nf := status.Error(codes.NotFound, "topic \"x\" not found")
	if got := publicError(context.Background(), log, "/floe.v1.TopicService/DescribeTopic", "", nf); got != nf || logs.Len() != 0 {
		t.Fatalf("client error became %v, logged %q", got, logs.String())
	}
}

// The guard's record of a refused message is taken back by the
// interceptor: nothing stays behind.
func TestGuardForgetsRefusals(t *testing.T) {
	g := &guard{log: slog.New(slog.DiscardHandler), base: encoding.GetCodecV2(protoenc.Name), cfg: DefaultConfig(), undecoded: make(map[any]error)}
	b := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 9)
	b = protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType),
		protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0xff}))
	m := &floev1.ProduceStreamRequest{}
	if err := g.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, m); err != nil {
		t.Fatal(err)
	}
	err := g.decodeError(m)
	var re *refusedError
	if !errors.As(err, &re) || re.requestID != 9 || status.Code(err) != codes.InvalidArgument || len(g.undecoded) != 0 {
		t.Fatalf("refusal %v (id %v), %d left", err, re, len(g.undecoded))
	}
	if err := g.decodeError(m); err != nil {
		t.Fatalf("second take: %v", err)
	}
}
