package metadatatest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/floe-broker/floe/metadata"
)

// testRetentionConfig: retention keys are validated at creation and by
// AlterTopicConfig, which sets and removes keys of a live topic; unknown
// keys are refused by both.
func testRetentionConfig(t *testing.T, s metadata.Store) {
	c := ctx(t)
	for _, bad := range []map[string]string{{"retention.ms": "soon"}, {"retention.bytes": "-2"}, {"retention.ms": "1e3"},
		{"cleanup.policy": "shred"}, {"retenton.ms": "1000"}, {"x": "y"}} {
		if _, err := s.CreateTopic(c, metadata.TopicSpec{Name: "bad", Partitions: 1, Config: bad}); !errors.Is(err, metadata.ErrInvalidConfig) {
			t.Errorf("CreateTopic(config %v) = %v, want ErrInvalidConfig", bad, err)
		}
	}
	tp, err := s.CreateTopic(c, metadata.TopicSpec{Name: "cfg", Partitions: 1, Config: map[string]string{"retention.ms": "1000", "iceberg.lag": "1m"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.AlterTopicConfig(c, "cfg", map[string]string{"retention.bytes": "4096", "retention.ms": "-1"}, []string{"iceberg.lag"})
	if err != nil {
		t.Fatalf("AlterTopicConfig: %v", err)
	}
	want := map[string]string{"retention.bytes": "4096", "retention.ms": "-1"}
	if got.ID != tp.ID || len(got.Config) != 2 || got.Config["retention.bytes"] != "4096" || got.Config["retention.ms"] != "-1" {
		t.Errorf("AlterTopicConfig = %+v, want config %v", got, want)
	}
	d, err := s.DescribeTopic(c, "cfg")
	if err != nil || len(d.Config) != 2 || d.Config["retention.bytes"] != "4096" {
		t.Errorf("DescribeTopic after alter: %v %v", d.Config, err)
	}
	r, err := metadata.ParseRetention(d.Config)
	if err != nil || r.Ms != -1 || r.Bytes != 4096 || !r.Delete {
		t.Errorf("ParseRetention(%v) = %+v, %v", d.Config, r, err)
	}
	for _, tc := range []struct {
		set    map[string]string
		remove []string
	}{
		{map[string]string{"retention.ms": "x"}, nil},
		{nil, nil},
		{map[string]string{"a": "1"}, []string{"a"}},
		{map[string]string{"": "1"}, nil},
		{map[string]string{"foo": "bar"}, nil}, // unknown keys are refused by alter too
	} {
		if _, err := s.AlterTopicConfig(c, "cfg", tc.set, tc.remove); !errors.Is(err, metadata.ErrInvalidConfig) {
			t.Errorf("AlterTopicConfig(%v, %v) = %v, want ErrInvalidConfig", tc.set, tc.remove, err)
		}
	}
	if _, err := s.AlterTopicConfig(c, "nope", map[string]string{"retention.ms": "1"}, nil); !errors.Is(err, metadata.ErrTopicNotFound) {
		t.Errorf("AlterTopicConfig(unknown topic) = %v, want ErrTopicNotFound", err)
	}
}

// testDeleteRecords: the log start moves forward on demand, never past the
// high watermark nor back; reads below it are out of range.
func testDeleteRecords(t *testing.T, s metadata.Store) {
	c := ctx(t)
	tp := createTopic(t, s, "dr", 2)
	for range 4 {
		commitOne(t, s, plain(tp.ID, 0, 5)) // offsets 0..19
	}
	st, err := s.DeleteRecords(c, tp.ID, 0, 7)
	if err != nil || st.LogStartOffset != 7 || st.HighWatermark != 20 {
		t.Fatalf("DeleteRecords(7) = %+v, %v", st, err)
	}
	var oor *metadata.OffsetOutOfRangeError
	if _, _, err := s.FindBatches(c, tp.ID, 0, 6, 1<<20); !errors.As(err, &oor) || oor.LogStartOffset != 7 || oor.HighWatermark != 20 {
		t.Errorf("FindBatches(6) = %v, want out of range [7, 20]", err)
	}
	refs, _, err := s.FindBatches(c, tp.ID, 0, 7, 1<<20)
	if err != nil || len(refs) != 3 || refs[0].BaseOffset != 5 {
		t.Errorf("FindBatches(7) = %d refs from %v, %v; want 3 from the batch at 5", len(refs), refs, err)
	}
	if off, err := s.ListOffset(c, tp.ID, 0, metadata.OffsetEarliest, 0); err != nil || off != 7 {
		t.Errorf("ListOffset(earliest) = %d, %v; want 7", off, err)
	}
	if st, err := s.DeleteRecords(c, tp.ID, 0, 3); err != nil || st.LogStartOffset != 7 {
		t.Errorf("DeleteRecords(3) after 7 = %+v, %v; want log start kept at 7", st, err)
	}
	if st, err := s.DeleteRecords(c, tp.ID, 0, 21); !errors.Is(err, metadata.ErrInvalidDeleteOffset) || st.HighWatermark != 20 {
		t.Errorf("DeleteRecords(21) = %+v, %v; want ErrInvalidDeleteOffset with the range", st, err)
	}
	if _, err := s.DeleteRecords(c, tp.ID, 0, -2); !errors.Is(err, metadata.ErrInvalidDeleteOffset) {
		t.Errorf("DeleteRecords(-2) = %v, want ErrInvalidDeleteOffset", err)
	}
	if _, err := s.DeleteRecords(c, tp.ID, 5, 0); !errors.Is(err, metadata.ErrPartitionNotFound) {
		t.Errorf("DeleteRecords(partition 5) = %v, want ErrPartitionNotFound", err)
	}
	if st, err := s.DeleteRecords(c, tp.ID, 0, metadata.DeleteToHighWatermark); err != nil || st.LogStartOffset != 20 {
		t.Errorf("DeleteRecords(-1) = %+v, %v; want log start 20", st, err)
	}
	if refs, st, err := s.FindBatches(c, tp.ID, 0, 20, 1<<20); err != nil || len(refs) != 0 || st.LogStartOffset != 20 {
		t.Errorf("FindBatches(20) on an emptied partition = %v, %+v, %v", refs, st, err)
	}
	// Commits go on after the emptied log.
	wantAccepted(t, "commit after delete-records", commitOne(t, s, plain(tp.ID, 0, 1)), 20)
}

// testRetentionBytes: size retention keeps the newest batches within the
// budget, counting whole batches.
func testRetentionBytes(t *testing.T, s metadata.Store) {
	c := ctx(t)
	tp := createTopic(t, s, "rb", 2)
	for range 5 {
		commitOne(t, s, plain(tp.ID, 0, 1)) // 100 bytes each, offsets 0..4
	}
	commitOne(t, s, plain(tp.ID, 1, 1))
	moved, err := metadata.ApplyRetention(c, s, tp.ID, metadata.Retention{Ms: -1, Bytes: 250})
	if err != nil {
		t.Fatal(err)
	}
	if len(moved) != 1 || moved[0].Partition != 0 || moved[0].LogStartOffset != 3 {
		t.Fatalf("ApplyRetention(250 bytes) moved %+v, want partition 0 to 3 (two batches of 100 kept)", moved)
	}
	if moved, err := metadata.ApplyRetention(c, s, tp.ID, metadata.Retention{Ms: -1, Bytes: 250}); err != nil || len(moved) != 0 {
		t.Errorf("second ApplyRetention = %+v, %v; want nothing moved", moved, err)
	}
	if moved, _ := metadata.ApplyRetention(c, s, tp.ID, metadata.Retention{Ms: -1, Bytes: 0}); len(moved) != 2 || moved[0].LogStartOffset != 5 || moved[1].LogStartOffset != 1 {
		t.Errorf("ApplyRetention(0 bytes) = %+v, want both partitions emptied", moved)
	}
}

// testRetentionTime: time retention passes the batches appended before
// now - retention.ms by the store's clock, and only those.
func testRetentionTime(t *testing.T, s metadata.Store) {
	c := ctx(t)
	tp := createTopic(t, s, "rt", 1)
	commitOne(t, s, plain(tp.ID, 0, 2))
	commitOne(t, s, plain(tp.ID, 0, 2)) // 0..3
	if moved, err := metadata.ApplyRetention(c, s, tp.ID, metadata.Retention{Ms: metadata.DefaultRetentionMs, Bytes: -1}); err != nil || len(moved) != 0 {
		t.Fatalf("ApplyRetention(7 days) = %+v, %v; want nothing moved", moved, err)
	}
	time.Sleep(600 * time.Millisecond)
	commitOne(t, s, plain(tp.ID, 0, 2)) // 4..5, young
	moved, err := metadata.ApplyRetention(c, s, tp.ID, metadata.Retention{Ms: 300, Bytes: -1})
	if err != nil || len(moved) != 1 || moved[0].LogStartOffset != 4 || moved[0].HighWatermark != 6 {
		t.Fatalf("ApplyRetention(300 ms) = %+v, %v; want log start 4", moved, err)
	}
	if off, _ := s.ListOffset(c, tp.ID, 0, metadata.OffsetEarliest, 0); off != 4 {
		t.Errorf("ListOffset(earliest) = %d, want 4", off)
	}
	// A log start inside a young batch stays.
	if _, err := s.DeleteRecords(c, tp.ID, 0, 5); err != nil {
		t.Fatal(err)
	}
	if moved, err := metadata.ApplyRetention(c, s, tp.ID, metadata.Retention{Ms: 60_000, Bytes: -1}); err != nil || len(moved) != 0 {
		t.Errorf("ApplyRetention with the log start inside a young batch = %+v, %v; want nothing moved", moved, err)
	}
}

// testDeadFiles: batches below the log start are collected in bounded
// steps; a file is marked only when none of its batches is left, listed
// for deletion after the grace period, and forgotten only when marked.
func testDeadFiles(t *testing.T, s metadata.Store) {
	c := ctx(t)
	tp := createTopic(t, s, "df", 2)
	k1, k2, k3 := key(), key(), key()
	commit(t, s, file(k1, plain(tp.ID, 0, 1), plain(tp.ID, 1, 1))) // p0: 0, p1: 0
	commit(t, s, file(k2, plain(tp.ID, 0, 1)))                     // p0: 1
	commit(t, s, file(k3, plain(tp.ID, 0, 1), plain(tp.ID, 1, 1))) // p0: 2, p1: 1
	if _, err := s.DeleteRecords(c, tp.ID, 0, 2); err != nil {
		t.Fatal(err)
	}
	st, err := s.TopicStorage(c, tp.ID)
	if err != nil || st.Batches != 5 || st.LiveBytes != 300 || st.DeadBytes != 200 || st.Files != 3 {
		t.Errorf("TopicStorage before collection = %+v, %v; want 5 batches, 300 live, 200 dead bytes, 3 files", st, err)
	}
	var total metadata.CollectResult
	for i := 0; ; i++ {
		r, err := s.CollectDeadBatches(c, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r.Batches > 1 {
			t.Fatalf("CollectDeadBatches(1) removed %d batches", r.Batches)
		}
		if r.Batches == 0 {
			break
		}
		total.Batches += r.Batches
		total.FilesMarked += r.FilesMarked
	}
	// k1 keeps partition 1's batch: only k2 dies.
	if total.Batches != 2 || total.FilesMarked != 1 {
		t.Errorf("collected %+v, want 2 batches and 1 file (k2)", total)
	}
	dead, err := s.DeletableFiles(c, 0, 10)
	if err != nil || len(dead) != 1 || dead[0].Key != k2 {
		t.Fatalf("DeletableFiles = %+v, %v; want only %s", dead, err, k2)
	}
	if later, err := s.DeletableFiles(c, time.Hour, 10); err != nil || len(later) != 0 {
		t.Errorf("DeletableFiles(grace 1h) = %+v, %v; want none yet", later, err)
	}
	q, err := s.DeletionQueue(c)
	if err != nil || q.Files != 1 || q.Bytes != dead[0].Size || q.Oldest.IsZero() {
		t.Errorf("DeletionQueue = %+v, %v", q, err)
	}
	unknown, err := s.UnknownKeys(c, []string{k1, k2, "test/v1/files/zz/never"})
	if err != nil || !slices.Equal(unknown, []string{"test/v1/files/zz/never"}) {
		t.Errorf("UnknownKeys = %v, %v", unknown, err)
	}
	// A file still referenced is never forgotten.
	if n, err := s.ForgetFiles(c, []int64{dead[0].ID}); err != nil || n != 1 {
		t.Errorf("ForgetFiles(dead) = %d, %v", n, err)
	}
	if unknown, _ := s.UnknownKeys(c, []string{k1, k2, k3}); !slices.Equal(unknown, []string{k2}) {
		t.Errorf("UnknownKeys after forget = %v, want [%s]", unknown, k2)
	}
	// The other partition's log start passes k1's last batch: k1 dies.
	if _, err := s.DeleteRecords(c, tp.ID, 1, 1); err != nil {
		t.Fatal(err)
	}
	if r, err := s.CollectDeadBatches(c, 100); err != nil || r.Batches != 1 || r.FilesMarked != 1 {
		t.Errorf("CollectDeadBatches after partition 1 moved = %+v, %v", r, err)
	}
	all, _, err := s.FindBatches(c, tp.ID, 0, 2, 1<<20)
	if err != nil || len(all) != 1 || all[0].FileKey != k3 {
		t.Errorf("partition 0 reads %+v, %v after collection, want the batch in %s", all, err, k3)
	}
}

// testDeletedTopicFiles: a deleted topic's batches are collected in
// bounded steps and its files die; an empty file is swept.
func testDeletedTopicFiles(t *testing.T, s metadata.Store) {
	c := ctx(t)
	tp := createTopic(t, s, "gone", 3)
	keep := createTopic(t, s, "kept", 1)
	var keys []string
	for i := range 6 {
		k := key()
		keys = append(keys, k)
		commit(t, s, file(k, plain(tp.ID, int32(i%3), 1), plain(tp.ID, int32((i+1)%3), 1)))
	}
	shared := key()
	commit(t, s, file(shared, plain(tp.ID, 0, 1), plain(keep.ID, 0, 1)))
	if err := s.DeleteTopic(c, "gone"); err != nil {
		t.Fatal(err)
	}
	marked := 0
	for {
		r, err := s.CollectDeadBatches(c, 5)
		if err != nil {
			t.Fatal(err)
		}
		if r.Batches > 5 {
			t.Fatalf("CollectDeadBatches(5) removed %d", r.Batches)
		}
		marked += r.FilesMarked
		if r.Batches == 0 {
			break
		}
	}
	if marked != 6 {
		t.Errorf("%d files marked after deleting the topic, want 6 (the shared file lives on)", marked)
	}
	if refs := allBatches(t, s, keep.ID, 0); len(refs) != 1 || refs[0].FileKey != shared {
		t.Errorf("the other topic reads %+v", refs)
	}
	// A file with no batch at all (every batch refused) is swept.
	empty := key()
	if res := commit(t, s, file(empty, plain(tp.ID, 0, 1))); !errors.Is(res[0].Err, metadata.ErrTopicNotFound) {
		t.Fatalf("commit to a deleted topic: %+v", res[0])
	}
	time.Sleep(20 * time.Millisecond)
	var swept int
	var after int64
	for {
		n, next, err := s.MarkEmptyFiles(c, after, 3, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		swept += n
		if next == 0 {
			break
		}
		if next <= after {
			t.Fatalf("MarkEmptyFiles cursor went from %d to %d", after, next)
		}
		after = next
	}
	if swept != 1 {
		t.Errorf("MarkEmptyFiles marked %d, want 1 (the empty file)", swept)
	}
	dead, _ := s.DeletableFiles(c, 0, 100)
	if len(dead) != 7 || slices.ContainsFunc(dead, func(f metadata.DeadFile) bool { return f.Key == shared }) {
		t.Errorf("%d deletable files %+v, want 7 without the shared one", len(dead), dead)
	}
}

// testLeases: one owner at a time; renewals by the owner; expiry and
// release hand it over; the cursor is written by the holder only.
func testLeases(t *testing.T, s metadata.Store) {
	c := ctx(t)
	mustLease := func(job, owner string, ttl time.Duration, want bool) {
		t.Helper()
		got, err := s.AcquireLease(c, job, owner, ttl)
		if err != nil || got != want {
			t.Fatalf("AcquireLease(%s, %s) = %v, %v; want %v", job, owner, got, err, want)
		}
	}
	mustLease("retention", "a", time.Minute, true)
	mustLease("retention", "b", time.Minute, false)
	mustLease("retention", "a", time.Minute, true)
	mustLease("orphans", "b", time.Minute, true) // jobs are independent
	if ok, err := s.SetJobCursor(c, "retention", "b", "x"); err != nil || ok {
		t.Errorf("SetJobCursor by a non-holder = %v, %v", ok, err)
	}
	if ok, err := s.SetJobCursor(c, "retention", "a", "cur-1"); err != nil || !ok {
		t.Errorf("SetJobCursor by the holder = %v, %v", ok, err)
	}
	if err := s.ReleaseLease(c, "retention", "a"); err != nil {
		t.Fatal(err)
	}
	mustLease("retention", "b", 200*time.Millisecond, true)
	if cur, err := s.JobCursor(c, "retention"); err != nil || cur != "cur-1" {
		t.Errorf("JobCursor after hand-over = %q, %v", cur, err)
	}
	mustLease("retention", "a", time.Minute, false)
	time.Sleep(400 * time.Millisecond)
	mustLease("retention", "a", time.Minute, true) // b's lease expired
	if cur, err := s.JobCursor(c, "none"); err != nil || cur != "" {
		t.Errorf("JobCursor(unknown job) = %q, %v", cur, err)
	}
	if _, err := s.AcquireLease(c, "", "a", time.Second); err == nil {
		t.Error("AcquireLease with an empty job succeeded")
	}
	now, err := s.Now(c)
	if err != nil || time.Since(now).Abs() > time.Minute {
		t.Errorf("Now = %v, %v", now, err)
	}
}

// retentionTests are the RetentionStore conformance tests, each on a fresh store.
var retentionTests = []struct {
	name string
	fn   func(t *testing.T, s metadata.Store)
}{
	{"RetentionConfig", testRetentionConfig},
	{"DeleteRecords", testDeleteRecords},
	{"RetentionBytes", testRetentionBytes},
	{"RetentionTime", testRetentionTime},
	{"RetentionRule", testRetentionRule}, // retention_rule.go
	{"DeadFiles", testDeadFiles},
	{"DeletedTopicFiles", testDeletedTopicFiles},
	{"Leases", testLeases},
	{"Merge", testMerge},
}

// testMerge: live batches of small, aged files are repointed to a merged
// file in one transaction; the emptied files die; batches that moved
// meanwhile are skipped; a repeated merge commit changes nothing.
func testMerge(t *testing.T, s metadata.Store) {
	c := ctx(t)
	tp := createTopic(t, s, "mg", 2)
	k1, k2, k3, big := key(), key(), key(), key()
	commit(t, s, file(k1, plain(tp.ID, 0, 1), plain(tp.ID, 1, 2))) // p0: 0, p1: 0..1
	commit(t, s, file(k2, plain(tp.ID, 0, 1)))                     // p0: 1
	commit(t, s, file(k3, plain(tp.ID, 0, 1)))                     // p0: 2
	bigFile := file(big, plain(tp.ID, 0, 1))                       // p0: 3
	bigFile.Size = 1 << 30
	commit(t, s, bigFile)
	if _, err := s.DeleteRecords(c, tp.ID, 0, 1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	cands, err := s.MergeCandidates(c, 1<<20, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range cands {
		got = append(got, fmt.Sprintf("%s/%d/%d", m.FileKey, m.Partition, m.BaseOffset))
	}
	want := []string{k1 + "/1/0", k2 + "/0/1", k3 + "/0/2"}
	if !slices.Equal(got, want) {
		t.Fatalf("MergeCandidates = %v, want %v (live batches of small files, oldest first)", got, want)
	}
	if young, _ := s.MergeCandidates(c, 1<<20, time.Hour, 10); len(young) != 0 {
		t.Errorf("MergeCandidates(min age 1h) = %v", young)
	}
	merged := metadata.MergeCommit{Key: key(), Size: 1000}
	for i, m := range cands {
		merged.Moves = append(merged.Moves, metadata.BatchMove{TopicID: m.TopicID, Partition: m.Partition, BaseOffset: m.BaseOffset,
			FromFileID: m.FileID, FromByteOffset: m.ByteOffset, ByteOffset: 16 + int64(i)*200})
	}
	stale := merged.Moves[0]
	stale.FromByteOffset++ // moved since: skipped
	merged.Moves = append(merged.Moves, stale)
	res, err := s.CommitMerge(c, merged)
	if err != nil || res.Moved != 3 || res.FilesMarked != 2 {
		t.Fatalf("CommitMerge = %+v, %v; want 3 moved, k2 and k3 marked (k1 keeps a dead batch)", res, err)
	}
	refs, _, err := s.FindBatches(c, tp.ID, 0, 1, 1<<20)
	if err != nil || len(refs) != 3 || refs[0].FileKey != merged.Key || refs[0].ByteOffset != 216 || refs[1].FileKey != merged.Key ||
		refs[1].ByteOffset != 416 || refs[2].FileKey != big {
		t.Errorf("partition 0 after merge: %+v, %v", refs, err)
	}
	if p1 := allBatches(t, s, tp.ID, 1); len(p1) != 1 || p1[0].FileKey != merged.Key || p1[0].ByteOffset != 16 || p1[0].ByteLength != 200 {
		t.Errorf("partition 1 after merge: %+v", p1)
	}
	if again, err := s.CommitMerge(c, merged); err != nil || again != (metadata.MergeResult{}) {
		t.Errorf("repeated CommitMerge = %+v, %v; want nothing done", again, err)
	}
	if r, err := s.CollectDeadBatches(c, 10); err != nil || r.Batches != 1 || r.FilesMarked != 1 {
		t.Errorf("CollectDeadBatches after merge = %+v, %v; want k1 marked", r, err)
	}
	dead, _ := s.DeletableFiles(c, 0, 10)
	var keys []string
	for _, f := range dead {
		keys = append(keys, f.Key)
	}
	slices.Sort(keys)
	wantDead := []string{k1, k2, k3}
	slices.Sort(wantDead)
	if !slices.Equal(keys, wantDead) {
		t.Errorf("deletable after merge: %v, want %v", keys, wantDead)
	}
}
