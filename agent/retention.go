package agent

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// describeStorageTimeout bounds the storage figures of DescribeTopic.
const describeStorageTimeout = 5 * time.Second

// AlterTopicConfig implements floev1.TopicServiceServer.
func (a *Agent) AlterTopicConfig(ctx context.Context, req *floev1.AlterTopicConfigRequest) (*floev1.AlterTopicConfigResponse, error) {
	if err := metadata.ValidateTopicName(req.GetName()); err != nil {
		return nil, toStatus(err)
	}
	if err := metadata.CheckConfigChange(req.GetSet(), req.GetRemove()); err != nil {
		return nil, toStatus(err)
	}
	cur, err := a.topics.getFresh(ctx, req.GetName())
	if err != nil {
		return nil, toStatus(err)
	}
	if err := a.cfg.checkTopicConfig(alteredConfig(cur.Config, req.GetSet(), req.GetRemove())); err != nil {
		return nil, err
	}
	t, err := a.meta.AlterTopicConfig(ctx, req.GetName(), req.GetSet(), req.GetRemove())
	if err != nil {
		return nil, toStatus(err)
	}
	a.topics.forget(req.GetName()) // this agent's produce checks the new config (value.schema) at once
	return &floev1.AlterTopicConfigResponse{Topic: topicPB(t)}, nil
}

// DeleteRecords implements floev1.TopicServiceServer.
func (a *Agent) DeleteRecords(ctx context.Context, req *floev1.DeleteRecordsRequest) (*floev1.DeleteRecordsResponse, error) {
	if err := metadata.ValidateTopicName(req.GetTopic()); err != nil {
		return nil, toStatus(err)
	}
	if req.GetOffset() < metadata.DeleteToHighWatermark {
		return nil, status.Errorf(codes.InvalidArgument, "delete records: offset %d must be >= 0, or -1 for the high watermark", req.GetOffset())
	}
	t, err := a.topicPartition(ctx, req.GetTopic(), req.GetPartition())
	if err != nil {
		return nil, err
	}
	if resp, handled, err := a.deleteTableRecords(ctx, t, req.GetPartition(), req.GetOffset()); handled { // table.go's topics
		a.topics.forgetIfGone(req.GetTopic(), err)
		return resp, err
	}
	st, err := a.meta.DeleteRecords(ctx, t.ID, req.GetPartition(), req.GetOffset())
	if err != nil {
		a.topics.forgetIfGone(req.GetTopic(), err)
		return nil, toStatus(err)
	}
	// This agent's index stops answering below the new log start at once;
	// the others learn it at their next poll (IndexPollInterval, well
	// inside the compactor's grace period).
	a.index.Polled(t.ID, []metadata.PartitionState{st})
	return &floev1.DeleteRecordsResponse{LogStartOffset: st.LogStartOffset, HighWatermark: st.HighWatermark}, nil
}

// describeStorage adds the storage figures to a DescribeTopic answer; they
// are left out (and the failure logged) when they cannot be read.
func (a *Agent) describeStorage(ctx context.Context, topicID int64, resp *floev1.DescribeTopicResponse) {
	// The figures sum the topic's batches: bounded, so that describing a
	// huge topic still answers (without them).
	ctx, cancel := context.WithTimeout(ctx, describeStorageTimeout)
	defer cancel()
	st, err := a.meta.TopicStorage(ctx, topicID)
	if err != nil {
		a.log.Warn("describe topic: storage figures unavailable", "topic_id", topicID, "err", err)
		return
	}
	resp.Storage = &floev1.TopicStorage{Files: st.Files, FileBytes: st.FileBytes, LiveBytes: st.LiveBytes,
		DeadBytes: st.DeadBytes, Batches: st.Batches}
	q, err := a.meta.DeletionQueue(ctx)
	if err != nil {
		a.log.Warn("describe topic: deletion queue unavailable", "err", err)
		return
	}
	resp.DeletionQueue = &floev1.DeletionQueue{Files: q.Files, Bytes: q.Bytes}
	if !q.Oldest.IsZero() {
		if now, err := a.meta.Now(ctx); err == nil {
			resp.DeletionQueue.OldestAgeMs = max(0, now.Sub(q.Oldest).Milliseconds())
		}
	}
}
