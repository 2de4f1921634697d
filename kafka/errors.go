package kafka

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floe-broker/floe/agent"
)

// errCode maps an error of the backend (a gRPC status, with floe's
// ErrorInfo reason where it has one) to the Kafka error code a client acts
// on. Retriable Kafka codes are chosen for what floe says may be retried.
func errCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	st, ok := status.FromError(err)
	if !ok {
		return kerr.UnknownServerError.Code
	}
	switch reason(st) {
	case agent.ReasonRecordTooLarge, agent.ReasonRequestTooLarge, agent.ReasonBatchTooLarge:
		return kerr.MessageTooLarge.Code
	case agent.ReasonInvalidBatch:
		return kerr.CorruptMessage.Code
	case agent.ReasonInvalidValue:
		return kerr.InvalidRecord.Code
	case agent.ReasonInvalidTimestamp: // past -timestamp-after-max / -before-max, as Kafka's message.timestamp.*
		return kerr.InvalidTimestamp.Code
	case agent.ReasonUnknownProducer:
		return kerr.UnknownProducerID.Code
	case agent.ReasonProducerFenced:
		return kerr.InvalidProducerEpoch.Code
	case agent.ReasonOutOfOrderSequence:
		return kerr.OutOfOrderSequenceNumber.Code
	case agent.ReasonOutcomeUnknown:
		return kerr.RequestTimedOut.Code // may or may not be written: an idempotent retry is safe
	case agent.ReasonShuttingDown:
		return kerr.NotLeaderForPartition.Code // refresh metadata, go elsewhere
	case agent.ReasonGroupNotEmpty:
		return kerr.NonEmptyGroup.Code
	case agent.ReasonUnknownMember:
		return kerr.UnknownMemberID.Code
	case agent.ReasonStaleMemberEpoch:
		return kerr.IllegalGeneration.Code
	case agent.ReasonNotPartitionOwner:
		return kerr.StaleMemberEpoch.Code // heartbeat to learn the assignment
	case "OFFSET_OUT_OF_RANGE":
		return kerr.OffsetOutOfRange.Code
	}
	switch st.Code() {
	case codes.NotFound:
		return kerr.UnknownTopicOrPartition.Code
	case codes.AlreadyExists:
		return kerr.TopicAlreadyExists.Code
	case codes.InvalidArgument:
		return kerr.InvalidRequest.Code
	case codes.OutOfRange:
		return kerr.OffsetOutOfRange.Code
	case codes.ResourceExhausted, codes.DeadlineExceeded, codes.Unknown:
		return kerr.RequestTimedOut.Code
	case codes.Unavailable:
		return kerr.NotEnoughReplicas.Code // nothing committed: retry
	case codes.Canceled:
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}

// errMessage is the message to send where a response has room for one.
func errMessage(err error) *string {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if st, ok := status.FromError(err); ok {
		msg = st.Message()
	}
	return &msg
}

func reason(st *status.Status) string {
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			return ei.GetReason()
		}
	}
	return ""
}
