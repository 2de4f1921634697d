package agent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"google.golang.org/grpc/codes"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// DeleteRecords of a topic its table serves (Kafka's semantics over the
// table and the raw files together): the partition's log start moves to
// the offset (the high watermark for -1), never back; the table's rows
// below it are no longer served (the floor, metadata.TableFloorJob), and
// the raw log start moves too when the offset is past it. The floor is
// written first: a failure after it leaves the records below it
// unserved and the call failed, which a retry completes.

const (
	// floorLeaseTTL bounds how long a DeleteRecords holds the floor lease
	// of a topic (it releases it at once).
	floorLeaseTTL = 10 * time.Second
	// floorLeaseTries bounds the waits for another DeleteRecords of the
	// same topic holding the lease.
	floorLeaseTries = 100
)

// deleteTableRecords is DeleteRecords for topic t when its table serves
// it; handled is false when it does not (the caller deletes in the raw
// log alone).
func (a *Agent) deleteTableRecords(ctx context.Context, t metadata.Topic, partition int32, offset int64) (resp *floev1.DeleteRecordsResponse, handled bool, err error) {
	tt, err := a.tableTopic(ctx, t.ID)
	if err != nil {
		return nil, true, toStatus(err)
	}
	if !tt.serves {
		return nil, false, nil
	}
	hw, err := a.meta.ListOffset(ctx, t.ID, partition, metadata.OffsetLatest, 0)
	if err != nil {
		return nil, true, toStatus(err)
	}
	target := offset
	if offset == metadata.DeleteToHighWatermark {
		target = hw
	}
	if target > hw {
		return nil, true, toStatus(fmt.Errorf("%w: offset %d is past the high watermark %d", metadata.ErrInvalidDeleteOffset, target, hw))
	}
	if err := a.raiseTableFloor(ctx, t.ID, partition, target); err != nil {
		return nil, true, toStatus(err)
	}
	st, err := a.meta.DeleteRecords(ctx, t.ID, partition, target)
	if err != nil {
		return nil, true, toStatus(err)
	}
	a.index.Polled(t.ID, []metadata.PartitionState{st})
	start, err := a.earliest(ctx, t.ID, partition, st.LogStartOffset)
	if err != nil {
		return nil, true, toStatus(err)
	}
	return &floev1.DeleteRecordsResponse{LogStartOffset: start, HighWatermark: st.HighWatermark}, true, nil
}

// raiseTableFloor raises the floor of the partition to offset (never
// lowers it), under the topic's floor lease.
func (a *Agent) raiseTableFloor(ctx context.Context, topicID int64, partition int32, offset int64) error {
	job := metadata.TableFloorJob(topicID)
	owner := fmt.Sprintf("delete-records-%d-%x", os.Getpid(), rand.Uint64())
	for try := 0; ; try++ {
		ok, err := a.meta.AcquireLease(ctx, job, owner, floorLeaseTTL)
		if err != nil {
			return fmt.Errorf("agent: delete records: floor lease: %w", err)
		}
		if ok {
			break
		}
		if try == floorLeaseTries {
			return errf(codes.Unavailable, "delete records: another DeleteRecords of the topic holds its lease; retry")
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := a.meta.ReleaseLease(rctx, job, owner); err != nil {
			a.log.Warn("delete records: release the floor lease", "job", job, "err", err)
		}
	}()
	cur, err := a.meta.JobCursor(ctx, job)
	if err != nil {
		return fmt.Errorf("agent: delete records: read the floors: %w", err)
	}
	floors := metadata.ParseTableFloors(cur)
	if floors[partition] < offset {
		floors[partition] = offset
		ok, err := a.meta.SetJobCursor(ctx, job, owner, metadata.FormatTableFloors(floors))
		if err != nil {
			return fmt.Errorf("agent: delete records: write the floors: %w", err)
		}
		if !ok {
			return errf(codes.Unavailable, "delete records: the floor lease expired before the write; retry")
		}
	}
	return nil
}
