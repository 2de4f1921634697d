package metadata

import (
	"context"
	"errors"
	"time"
)

// Consumer groups: membership, assignment and committed positions, close to
// Kafka's KIP-848 protocol so that the Kafka front end maps onto it.
//
// A group has members; each member has an id, a member epoch, a
// subscription (topic names), a session timeout and the time of its last
// heartbeat by the store's clock (PostgreSQL's now(), Go's clock for
// SQLite). The group epoch is bumped whenever membership or a subscription
// changes (or a subscribed topic appears, disappears or changes its
// partition count); the target assignment (computed by package group:
// balanced, sticky) is recomputed then. Each member converges on its target
// cooperatively: a partition moves to its new owner only once the old
// owner's heartbeat no longer lists it as owned, or the old owner left or
// expired. Hence no partition is ever assigned to two members at once.
//
// A member's epoch becomes the group epoch once it has nothing left to
// release (KIP-848's rule; partitions still held by others may arrive
// later, see HeartbeatResponse.Pending). A member that keeps a partition it
// was asked to release for longer than its session timeout is fenced like
// an expired one. Commits are fenced by (member id, member epoch) and
// ownership, so a zombie cannot move the group's position. A member whose
// heartbeat answer was lost may find its epoch stale (ErrStaleMemberEpoch):
// it drops its partitions and rejoins with JoinEpoch (keeping its id).

var (
	// ErrGroupNotFound: the group has neither members nor committed
	// positions (it does not exist).
	ErrGroupNotFound = errors.New("metadata: group not found")
	// ErrInvalidGroup: a malformed group request (empty or too long group
	// name, bad epoch, unknown reset spec, ...). The message says what.
	ErrInvalidGroup = errors.New("metadata: invalid group request")
	// ErrUnknownMember: the member id is not a member of the group (it left,
	// expired and was fenced, or never joined). The client rejoins with
	// member epoch 0 (and may keep its member id).
	ErrUnknownMember = errors.New("metadata: unknown group member")
	// ErrStaleMemberEpoch: the member exists but the epoch given is not its
	// current one (a commit or heartbeat from an older incarnation). The
	// client heartbeats to learn its epoch (or rejoins with epoch 0).
	ErrStaleMemberEpoch = errors.New("metadata: stale member epoch")
	// ErrNotPartitionOwner: a commit for a partition the member does not own
	// (neither assigned nor pending revocation).
	ErrNotPartitionOwner = errors.New("metadata: member does not own the partition")
	// ErrGroupNotEmpty: the operation needs a group without live members
	// (delete, reset without force, a commit without member id).
	ErrGroupNotEmpty = errors.New("metadata: group has live members")
)

// MaxGroupNameLen bounds group names (and member ids).
const MaxGroupNameLen = 255

// Member epochs with a special meaning in a HeartbeatRequest.
const (
	// JoinEpoch joins (or rejoins, dropping the member's previous state).
	JoinEpoch int32 = 0
	// LeaveEpoch leaves the group: the member's partitions are freed at once.
	LeaveEpoch int32 = -1
)

// DefaultSessionTimeout is used when a HeartbeatRequest leaves it zero.
const DefaultSessionTimeout = 45 * time.Second

// TopicPartition names one partition by topic id.
type TopicPartition struct {
	TopicID   int64
	Partition int32
}

// HeartbeatRequest is one member heartbeat.
type HeartbeatRequest struct {
	Group string
	// MemberID identifies the member; "" with MemberEpoch JoinEpoch asks the
	// store to generate one. A client may also choose its own id.
	MemberID string
	// MemberEpoch is JoinEpoch to join, LeaveEpoch to leave, else the epoch
	// of the member's last heartbeat answer.
	MemberEpoch int32
	// Subscription is the topic names the member consumes (required on
	// join; nil keeps the current one; an empty non-nil slice is refused).
	// Names of topics that do not exist (yet) are allowed.
	Subscription []string
	// Owned is the complete set of partitions the member holds right now:
	// every partition of its last Assigned plus those it was asked to give
	// up and has not released yet (it stops listing a partition once it
	// has stopped reading it and committed: that acknowledges the
	// revocation). A client adds what an answer assigns before its next
	// heartbeat. Ignored on join and leave.
	Owned []TopicPartition
	// SessionTimeout: without a heartbeat for this long (store clock) the
	// member is fenced by the next heartbeat of any member of the group.
	// Zero means DefaultSessionTimeout; taken on join and on every heartbeat.
	SessionTimeout time.Duration
	// LeavingEpoch, on a leave, is the member epoch of the session that
	// leaves (its last heartbeat answer). When > 0 the leave is refused with
	// ErrStaleMemberEpoch unless the member is still at that epoch: a late
	// leave from an older session (a stream the client left for another
	// agent, which rejoined) must not remove the member a newer session
	// serves. 0 leaves at any epoch.
	LeavingEpoch int32
}

// HeartbeatResponse is the member's state after the heartbeat.
type HeartbeatResponse struct {
	MemberID    string
	MemberEpoch int32 // LeaveEpoch after a leave
	GroupEpoch  int32
	// Assigned is what the member may own now, sorted by (topic id,
	// partition): partitions the member owned that it must release are
	// not in it (it must stop reading them, commit, and stop listing them
	// in Owned), and partitions of its target still held by another member
	// are added by a later heartbeat.
	Assigned []TopicPartition
	// Pending counts target partitions not yet in Assigned (still held by
	// their previous owner); > 0 means "heartbeat again soon".
	Pending int
	// HeartbeatInterval is when the member should heartbeat next: a third
	// of the session timeout (50 ms to 5 s), at most 100 ms while the
	// member has partitions to release or pending.
	HeartbeatInterval time.Duration
}

// OffsetCommit is one committed position: the next offset to consume.
type OffsetCommit struct {
	TopicID   int64
	Partition int32
	Offset    int64 // >= 0
	Metadata  string
}

// CommitOffsetsRequest commits positions for a group.
type CommitOffsetsRequest struct {
	Group string
	// MemberID and MemberEpoch fence the commit. MemberID "" commits as a
	// "simple" group (manual assignment), allowed only while the group has
	// no live members (else ErrGroupNotEmpty).
	MemberID    string
	MemberEpoch int32
	Offsets     []OffsetCommit
}

// CommittedOffset is a group's committed position for a partition.
type CommittedOffset struct {
	TopicID    int64
	Partition  int32
	Offset     int64
	Metadata   string
	CommitTime time.Time // store clock
}

// GroupState summarises a group.
type GroupState string

const (
	GroupEmpty       GroupState = "empty"       // no live members (maybe positions)
	GroupStable      GroupState = "stable"      // every member holds exactly its target
	GroupReconciling GroupState = "reconciling" // some member still has to release or receive partitions
)

// GroupListing is one entry of ListGroups.
type GroupListing struct {
	Group   string
	State   GroupState
	Members int // live members
	// LastRebalanceDuration is as in GroupDescription.
	LastRebalanceDuration time.Duration
}

// GroupMember is one member as DescribeGroup shows it.
type GroupMember struct {
	MemberID       string
	MemberEpoch    int32
	Subscription   []string
	Assigned       []TopicPartition // may own now
	Revoking       []TopicPartition // assigned before, must release (still owned)
	Target         []TopicPartition // target assignment
	SessionTimeout time.Duration
	LastHeartbeat  time.Time
	JoinedAt       time.Time
}

// GroupDescription is a group's full state.
type GroupDescription struct {
	Group      string
	State      GroupState
	GroupEpoch int32
	// LastRebalance is when the group epoch last changed (zero if never);
	// LastRebalanceDuration how long the previous epoch change took to
	// become stable (zero while reconciling or never measured).
	LastRebalance         time.Time
	LastRebalanceDuration time.Duration
	Members               []GroupMember // live members, sorted by id
	Offsets               []CommittedOffset
}

// ResetSpec says where ResetOffsets moves positions.
type ResetSpec int

const (
	ResetEarliest  ResetSpec = iota // the log start offset
	ResetLatest                     // the high watermark
	ResetTimestamp                  // ListOffset(OffsetTimestamp, Timestamp)
	ResetOffset                     // Offset, clamped to [log start, high watermark]
	ResetShift                      // committed (or log start if none) + Shift, clamped
)

// ResetOffsetsRequest plans (and, unless DryRun, applies) a reset.
type ResetOffsetsRequest struct {
	Group string
	// Partitions to reset; empty means every partition of Topics, and
	// with Topics empty too, every partition the group has a position for.
	Partitions []TopicPartition
	Topics     []int64 // topic ids: all their partitions
	Spec       ResetSpec
	Timestamp  int64 // unix ms, for ResetTimestamp
	Offset     int64 // for ResetOffset
	Shift      int64 // for ResetShift (negative moves back)
	// Force resets even while the group has live members (they are not
	// told; their next commit may overwrite the reset).
	Force  bool
	DryRun bool
}

// OffsetReset is one line of a reset plan.
type OffsetReset struct {
	TopicID   int64
	Partition int32
	Previous  int64 // -1 when nothing was committed
	New       int64
}

// PartitionLagInput is what lag needs, for one partition a group has a
// position for, read in one snapshot.
type PartitionLagInput struct {
	TopicID        int64
	Partition      int32
	Committed      int64 // the group's committed offset
	HighWatermark  int64
	LogStartOffset int64
	// BytesBehind sums ByteLength of the batches holding offsets
	// [max(Committed, LogStartOffset), HighWatermark).
	BytesBehind int64
	// FirstUnconsumedAppendTime and FirstUnconsumedMaxTimestamp are of the
	// batch holding offset max(Committed, LogStartOffset), unix ms; 0 when
	// nothing is unconsumed.
	FirstUnconsumedAppendTime   int64
	FirstUnconsumedMaxTimestamp int64
}

// GroupStore is the consumer-group half of the store. Every method is safe
// for concurrent use from many goroutines and (PostgreSQL) many processes;
// each is one transaction, so concurrent heartbeats of one group serialise
// on the group and never see each other's partial writes. Group names are
// 1..MaxGroupNameLen bytes (ErrInvalidGroup otherwise). Errors other than
// the sentinels are store failures (wrapped), to be retried.
type GroupStore interface {
	// Heartbeat joins, heartbeats or leaves (see HeartbeatRequest). First
	// it fences every member whose session expired (store clock), then
	// applies the request, recomputes the target assignment if the group
	// epoch changed, and reconciles the member: partitions it must give
	// up are dropped from Assigned once Owned no longer lists them, and
	// partitions no other member holds are added. A heartbeat of a stable
	// member is one statement on PostgreSQL. Errors: ErrUnknownMember,
	// ErrStaleMemberEpoch, ErrInvalidGroup. The group is created by the
	// first join.
	Heartbeat(ctx context.Context, req HeartbeatRequest) (HeartbeatResponse, error)

	// CommitOffsets stores positions atomically (all or none). With a
	// member id: ErrUnknownMember when not a member (or expired),
	// ErrStaleMemberEpoch when the epoch is not the member's current one,
	// ErrNotPartitionOwner when a partition is neither assigned to nor
	// being revoked from the member. Without a member id: ErrGroupNotEmpty
	// while the group has live members. ErrTopicNotFound /
	// ErrPartitionNotFound for partitions that do not exist;
	// ErrInvalidGroup for a negative offset. The commit creates the group
	// if needed.
	CommitOffsets(ctx context.Context, req CommitOffsetsRequest) error

	// FetchOffsets returns committed positions of the partitions given
	// (all of the group's when nil), sorted by (topic id, partition);
	// partitions without a position are left out. An unknown group
	// returns none and no error.
	FetchOffsets(ctx context.Context, group string, partitions []TopicPartition) ([]CommittedOffset, error)

	// ListGroups returns every group (with members or positions), by name.
	ListGroups(ctx context.Context) ([]GroupListing, error)

	// DescribeGroup returns the group's state; expired members not yet
	// fenced are left out. ErrGroupNotFound when it does not exist.
	DescribeGroup(ctx context.Context, group string) (GroupDescription, error)

	// DeleteGroup removes the group, its members (all expired) and its
	// positions. ErrGroupNotEmpty while members are live; ErrGroupNotFound.
	DeleteGroup(ctx context.Context, group string) error

	// DeleteOffsets removes the group's positions of partitions (Kafka's
	// OffsetDelete); partitions without one are no error.
	// ErrGroupNotEmpty while members are live; ErrGroupNotFound.
	DeleteOffsets(ctx context.Context, group string, partitions []TopicPartition) error

	// ResetOffsets computes new positions (see ResetSpec) and, unless
	// DryRun, commits them in one transaction; it returns the plan sorted
	// by (topic id, partition). ErrGroupNotEmpty while members are live
	// unless Force; ErrGroupNotFound when the group does not exist (a reset
	// never creates one); ErrTopicNotFound / ErrPartitionNotFound; ErrInvalidGroup.
	ResetOffsets(ctx context.Context, req ResetOffsetsRequest) ([]OffsetReset, error)

	// CopyOffsets copies every committed position of group from into group
	// to (overwriting to's positions of the same partitions) and returns how
	// many. ErrGroupNotFound when from has no positions; ErrGroupNotEmpty
	// when to has live members.
	CopyOffsets(ctx context.Context, from, to string) (int, error)

	// GroupLag returns the lag inputs of every partition the group has a
	// committed position for, sorted by (topic id, partition), in one
	// snapshot. Partitions of deleted topics are left out. An unknown group
	// returns none.
	GroupLag(ctx context.Context, group string) ([]PartitionLagInput, error)

	// TopGroupLag is GroupLag for the (at most limit) groups with the most
	// records behind, most first (ties by name), in one statement whatever
	// the number of groups, with BytesBehind left 0 (BatchBytes sums them
	// incrementally). Groups without a position are left out.
	TopGroupLag(ctx context.Context, limit int) ([]GroupLagInputs, error)

	// BatchBytes sums ByteLength of the batches in each range, in one
	// statement: the incremental parts of lag in bytes.
	BatchBytes(ctx context.Context, ranges []BatchRange) ([]int64, error)

	// ExpireGroups deletes the groups (positions included) that the rule
	// group.Expire says are past retention: no live member, nothing
	// committed and no member seen for retention. It skips groups locked
	// by a concurrent operation and returns the names deleted. A constant
	// number of statements whatever the number of groups.
	ExpireGroups(ctx context.Context, retention time.Duration) ([]string, error)
}

// GroupLagInputs is one group's lag inputs (TopGroupLag).
type GroupLagInputs struct {
	Group string
	// RecordsBehind sums HighWatermark - max(Committed, LogStartOffset)
	// over the group's partitions.
	RecordsBehind int64
	Partitions    []PartitionLagInput // sorted by (topic id, partition)
}

// BatchRange selects one partition's batches with LastFrom <= last offset
// < LastTo and BaseFrom <= base offset < BaseTo.
type BatchRange struct {
	TopicID          int64
	Partition        int32
	LastFrom, LastTo int64
	BaseFrom, BaseTo int64
}
