package agent

import (
	"context"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/metadata"
)

// Entry points for the Kafka front end (package kafka): the same produce,
// read, topic and group paths the gRPC handlers use, without their
// protobuf framing. Every error is what toStatus makes of it (a gRPC
// status, with ErrorInfo reasons where a client can act on them), so the
// Kafka side maps errors in one place whatever path they come from.

// KafkaLimits are the agent limits the Kafka front end holds requests to.
type KafkaLimits struct {
	MaxFetchBytes   int // cap of one partition's (and one response's) bytes
	MaxRequestBytes int // a produce request's batches, counted uncompressed
	MaxWaitMs       int64
	PollIntervalMs  int64
}

// KafkaLimits returns the agent's limits as the Kafka front end uses them.
func (a *Agent) KafkaLimits() KafkaLimits {
	return KafkaLimits{MaxFetchBytes: a.cfg.MaxFetchBytes, MaxRequestBytes: a.cfg.MaxRequestBytes,
		MaxWaitMs: a.cfg.MaxWait.Milliseconds(), PollIntervalMs: a.cfg.PollInterval.Milliseconds()}
}

// KafkaTopic resolves a topic by name (through the agent's topic cache).
func (a *Agent) KafkaTopic(ctx context.Context, name string) (metadata.Topic, error) {
	t, err := a.topics.get(ctx, name)
	return t, toStatus(err)
}

// KafkaTopicByID resolves a topic by id.
func (a *Agent) KafkaTopicByID(ctx context.Context, id int64) (metadata.Topic, error) {
	t, err := a.meta.TopicByID(ctx, id)
	return t, toStatus(err)
}

// KafkaTopics lists every topic.
func (a *Agent) KafkaTopics(ctx context.Context) ([]metadata.Topic, error) {
	ts, err := a.meta.ListTopics(ctx)
	return ts, toStatus(err)
}

// KafkaPartitionStates returns a topic's partition states.
func (a *Agent) KafkaPartitionStates(ctx context.Context, topicID int64) ([]metadata.PartitionState, error) {
	st, err := a.meta.PartitionStates(ctx, topicID)
	return st, toStatus(err)
}

// KafkaListOffset resolves earliest, latest or a timestamp to an offset.
func (a *Agent) KafkaListOffset(ctx context.Context, topicID int64, partition int32, spec metadata.OffsetSpec, ts int64) (int64, error) {
	off, err := a.listOffset(ctx, topicID, partition, spec, ts)
	return off, toStatus(err)
}

// KafkaInitProducer allocates an idempotent producer id, or bumps the
// epoch of id (metadata.ProducerStore.ReinitProducer; -1, -1 for a new id).
func (a *Agent) KafkaInitProducer(ctx context.Context, id int64, epoch int16) (int64, int16, error) {
	id, epoch, err := a.meta.ReinitProducer(ctx, id, epoch)
	return id, epoch, toStatus(err)
}

// writerMaker is a Producer that tells when every client writing to its
// open file waits on it (batcher.Batcher.NewWriter).
type writerMaker interface {
	NewWriter() *batcher.Writer
}

// KafkaNewWriter returns the batcher's Writer for one Kafka connection,
// or nil when the producer keeps none. The connection passes it to
// KafkaAppend in the context (batcher.WithWriter) and reports each produce
// request's progress on it; it closes it when the connection ends.
func (a *Agent) KafkaNewWriter() *batcher.Writer {
	if wm, ok := a.producer.(writerMaker); ok {
		return wm.NewWriter()
	}
	return nil
}

// KafkaPending is a Kafka batch handed to the batcher, not yet committed.
type KafkaPending struct {
	a     *Agent
	plan  *producePlan
	pend  []*batcher.Pending
	start time.Time
}

// KafkaProduced is where a committed Kafka batch landed.
type KafkaProduced struct {
	BaseOffset    int64
	LogAppendTime int64 // the sequencer's clock at commit, unix ms
	Duplicate     bool  // an idempotent retry of a committed batch
}

// KafkaAppend validates one Kafka v2 record batch bound for a partition
// (kbatch.Validate, exactly as ProduceBatches does) and appends it to the
// batcher. Batches appended one after the other, for one partition, are
// committed in that order. The batch must not be modified afterwards.
func (a *Agent) KafkaAppend(ctx context.Context, topic string, partition int32, batch []byte) (*KafkaPending, error) {
	req := &floev1.ProduceBatchesRequest{Topic: topic, Partitions: []*floev1.PartitionBatches{{Partition: partition, Batches: batch}}}
	start := time.Now()
	plan, err := a.planBatches(ctx, req)
	if err != nil {
		a.m.produced(0, 0, time.Since(start), err)
		return nil, err
	}
	pend, err := a.appendPlan(ctx, plan)
	if err != nil {
		a.m.produced(plan.n, plan.bytes, time.Since(start), err)
		return nil, err
	}
	return &KafkaPending{a: a, plan: plan, pend: pend, start: start}, nil
}

// Wait waits for the batch's commit. ctx ending before the commit starts
// withdraws the batch.
func (p *KafkaPending) Wait(ctx context.Context) (KafkaProduced, error) {
	resp, err := p.a.awaitBatches(ctx, p.plan, p.pend)
	p.a.m.produced(p.plan.n, p.plan.bytes, time.Since(p.start), err)
	if err != nil {
		return KafkaProduced{}, err
	}
	r := resp.GetResults()[0]
	return KafkaProduced{BaseOffset: r.GetBaseOffset(), LogAppendTime: resp.GetLogAppendTimeMs(), Duplicate: r.GetDuplicate()}, nil
}

// KafkaBatches is one read of stored batches.
type KafkaBatches struct {
	Batches        []byte // whole Kafka v2 batches, base offsets set
	Records        int
	HighWatermark  int64
	LogStartOffset int64
	Next           int64
}

// KafkaRead reads whole stored batches of a partition from offset, at
// most maxBytes of them but at least one when any exists, without
// waiting. The first batch may start below offset.
func (a *Agent) KafkaRead(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int) (KafkaBatches, error) {
	r, st, err := a.readStoredBatches(ctx, topicID, partition, offset, max(1, min(maxBytes, a.cfg.MaxFetchBytes)))
	if err != nil {
		return KafkaBatches{}, toStatus(err)
	}
	a.m.fetched(r.records)
	var batches []byte
	if r.answer != nil {
		batches = r.answer.Bytes() // one copy, as before; kmsg copies it into the response
	}
	return KafkaBatches{Batches: batches, Records: r.records, HighWatermark: st.HighWatermark, LogStartOffset: st.LogStartOffset, Next: r.next}, nil
}

// KafkaHeld is one read of stored batches that references them where
// they were read (the read cache's buffers, held until Release) instead
// of copying them: the Kafka listener writes Segments into its response
// frame, then releases them.
type KafkaHeld struct {
	// Segments, concatenated, are whole Kafka v2 batches with their base
	// offsets set; never to be modified, and valid only until Release.
	Segments       [][]byte
	Size           int // the segments' bytes
	Records        int
	HighWatermark  int64
	LogStartOffset int64
	Next           int64
	release        func() // nil: nothing held
}

// NewKafkaHeld is a read of segs that release lets go of (for backends
// other than the agent: tests).
func NewKafkaHeld(segs [][]byte, release func()) KafkaHeld {
	h := KafkaHeld{Segments: segs, release: release}
	for _, s := range segs {
		h.Size += len(s)
	}
	return h
}

// Release lets go of what the segments reference; calls after the first
// do nothing. A read never released keeps its buffers out of reuse (they
// are left to the garbage collector), which is safe.
func (h *KafkaHeld) Release() {
	if h.release != nil {
		h.release()
	}
	h.release, h.Segments = nil, nil
}

// KafkaReadHeld is KafkaRead without the copy: the batches are referenced
// where they were read until the caller releases them.
func (a *Agent) KafkaReadHeld(ctx context.Context, topicID int64, partition int32, offset int64, maxBytes int) (KafkaHeld, error) {
	r, st, err := a.readStoredBatches(ctx, topicID, partition, offset, max(1, min(maxBytes, a.cfg.MaxFetchBytes)))
	if err != nil {
		return KafkaHeld{}, toStatus(err)
	}
	a.m.fetched(r.records)
	out := KafkaHeld{Records: r.records, HighWatermark: st.HighWatermark, LogStartOffset: st.LogStartOffset, Next: r.next}
	if r.answer != nil {
		out.release, out.Segments, out.Size = r.answer.Drop, r.answer.Segments(), r.answer.Len()
	}
	return out, nil
}

// KafkaWake returns, for each partition, a channel closed at its next
// commit notice. Take them before reading, then wait on them.
func (a *Agent) KafkaWake(tps []metadata.TopicPartition) []<-chan struct{} {
	out := make([]<-chan struct{}, len(tps))
	for i, tp := range tps {
		out[i] = a.hub.wait(tp.TopicID, tp.Partition)
	}
	return out
}

// KafkaCreateTopic creates a topic (validated as CreateTopic does).
func (a *Agent) KafkaCreateTopic(ctx context.Context, name string, partitions int32, config map[string]string) (metadata.Topic, error) {
	resp, err := a.CreateTopic(ctx, &floev1.CreateTopicRequest{Name: name, Partitions: partitions, Config: config})
	if err != nil {
		return metadata.Topic{}, err
	}
	t := resp.GetTopic()
	return metadata.Topic{ID: t.GetId(), Name: t.GetName(), Partitions: t.GetPartitions(), Config: t.GetConfig()}, nil
}

// KafkaDeleteTopic deletes a topic.
func (a *Agent) KafkaDeleteTopic(ctx context.Context, name string) error {
	_, err := a.DeleteTopic(ctx, &floev1.DeleteTopicRequest{Name: name})
	return err
}

// KafkaCommitOffsets commits positions for group. With memberID "" it is
// a member-less ("simple") commit: the Kafka front end fences
// classic-protocol members by generation itself; it is refused
// (GROUP_NOT_EMPTY) while the group has live members of floe's own
// protocol. With a member id it is fenced by floe's store as the gRPC
// CommitOffsets is (KIP-848 members, whose epochs are floe's).
func (a *Agent) KafkaCommitOffsets(ctx context.Context, group, memberID string, memberEpoch int32, offsets []metadata.OffsetCommit) error {
	err := a.meta.CommitOffsets(ctx, metadata.CommitOffsetsRequest{Group: group, MemberID: memberID, MemberEpoch: memberEpoch, Offsets: offsets})
	if err != nil {
		return toStatus(err)
	}
	a.grp.committed(group, memberID, offsets)
	return nil
}

// KafkaGroupHeartbeat is a heartbeat of floe's group protocol (the one
// gRPC consumers use), for Kafka's KIP-848 ConsumerGroupHeartbeat.
func (a *Agent) KafkaGroupHeartbeat(ctx context.Context, req metadata.HeartbeatRequest) (metadata.HeartbeatResponse, error) {
	resp, err := a.meta.Heartbeat(ctx, req)
	return resp, toStatus(err)
}

// KafkaFetchOffsets returns a group's committed positions (all of them
// when partitions is nil).
func (a *Agent) KafkaFetchOffsets(ctx context.Context, group string, partitions []metadata.TopicPartition) ([]metadata.CommittedOffset, error) {
	out, err := a.meta.FetchOffsets(ctx, group, partitions)
	return out, toStatus(err)
}

// KafkaListGroups lists the groups floe's store knows.
func (a *Agent) KafkaListGroups(ctx context.Context) ([]metadata.GroupListing, error) {
	out, err := a.meta.ListGroups(ctx)
	return out, toStatus(err)
}

// KafkaDescribeGroup describes a group of floe's store.
func (a *Agent) KafkaDescribeGroup(ctx context.Context, group string) (metadata.GroupDescription, error) {
	d, err := a.meta.DescribeGroup(ctx, group)
	return d, toStatus(err)
}

// KafkaDeleteGroup deletes a group of floe's store and its positions.
func (a *Agent) KafkaDeleteGroup(ctx context.Context, group string) error {
	return toStatus(a.meta.DeleteGroup(ctx, group))
}

// KafkaDeleteOffsets deletes a group's positions of some partitions.
func (a *Agent) KafkaDeleteOffsets(ctx context.Context, group string, partitions []metadata.TopicPartition) error {
	return toStatus(a.meta.DeleteOffsets(ctx, group, partitions))
}

// KafkaBeatAgent refreshes this agent's row among the live agents and
// returns them.
func (a *Agent) KafkaBeatAgent(ctx context.Context, me metadata.AgentInfo, ttl time.Duration) ([]metadata.AgentInfo, error) {
	live, err := a.meta.BeatAgent(ctx, me, ttl)
	return live, toStatus(err)
}

// KafkaLeaveAgent removes this agent's row (a clean shutdown).
func (a *Agent) KafkaLeaveAgent(ctx context.Context, id string) error {
	return toStatus(a.meta.LeaveAgent(ctx, id))
}

// KafkaProducers lists a partition's idempotent producer states.
func (a *Agent) KafkaProducers(ctx context.Context, topicID int64, partition int32, limit int) ([]metadata.ProducerInfo, error) {
	ps, err := a.meta.Producers(ctx, topicID, partition, limit)
	return ps, toStatus(err)
}
