package postgres

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/metadata"
)

func TestParseRefsPayload(t *testing.T) {
	r1 := metadata.BatchRef{TopicID: 3, Partition: 1, BaseOffset: 10, LastOffset: 14, FileKey: "v1/files/0a/X",
		FileSize: 900, ByteOffset: 40, ByteLength: 100, RecordCount: 5, MaxTimestamp: 1700, LogAppendTime: 1800}
	r2 := r1
	r2.BaseOffset, r2.LastOffset, r2.ByteOffset, r2.RecordCount = 15, 15, 140, 1
	r3 := r1
	r3.Partition, r3.BaseOffset, r3.LastOffset = 0, 0, 4
	var b []byte
	for i, r := range []metadata.BatchRef{r1, r2, r3} {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendRefItem(b, &r)
	}
	n, ok := ParseRefsPayload(string(b))
	if !ok {
		t.Fatalf("ParseRefsPayload(%q) refused", b)
	}
	want := metadata.Notice{
		Partitions: []metadata.PartitionNotice{{TopicID: 3, Partition: 1, HighWatermark: 16}, {TopicID: 3, Partition: 0, HighWatermark: 5}},
		Batches:    []metadata.BatchRef{r1, r2, r3},
	}
	if !reflect.DeepEqual(n, want) {
		t.Fatalf("ParseRefsPayload = %+v\nwant %+v", n, want)
	}
	good := string(appendRefItem(nil, &r1))
	for name, p := range map[string]string{
		"empty":          "",
		"short":          "3:1:10:5:40:100:1700:1800:900",
		"no key":         "3:1:10:5:40:100:1700:1800:900:",
		"not a number":   "3:x:10:5:40:100:1700:1800:900:k",
		"zero records":   "3:1:10:0:40:100:1700:1800:900:k",
		"past the file":  "3:1:10:5:850:100:1700:1800:900:k",
		"negative part":  "3:-1:10:5:40:100:1700:1800:900:k",
		"out of order":   good + "," + good,
		"trailing comma": good + ",",
	} {
		if n, ok := ParseRefsPayload(p); ok {
			t.Errorf("%s: ParseRefsPayload(%q) = %+v, want refused", name, p, n)
		}
	}
}

func FuzzParseRefsPayload(f *testing.F) {
	r := metadata.BatchRef{TopicID: 1, Partition: 2, BaseOffset: 3, LastOffset: 3, FileKey: "k", FileSize: 200,
		ByteOffset: 0, ByteLength: 70, RecordCount: 1}
	f.Add(string(appendRefItem(nil, &r)))
	f.Add("1:2:3:1:0:70:0:0:200:k,1:2:4:1:70:70:0:0:200:k")
	f.Add("*")
	f.Fuzz(func(t *testing.T, p string) {
		n, ok := ParseRefsPayload(p)
		if !ok {
			return
		}
		// Whatever it accepts is consistent: batches within their files,
		// each partition's high watermark past its batches.
		hw := map[[2]int64]int64{}
		for _, pn := range n.Partitions {
			hw[[2]int64{pn.TopicID, int64(pn.Partition)}] = pn.HighWatermark
		}
		for _, b := range n.Batches {
			if b.RecordCount < 1 || b.LastOffset != b.BaseOffset+int64(b.RecordCount)-1 || b.ByteOffset < 0 ||
				b.ByteOffset+b.ByteLength > b.FileSize || b.FileKey == "" || hw[[2]int64{b.TopicID, int64(b.Partition)}] <= b.LastOffset {
				t.Fatalf("accepted an inconsistent batch %+v from %q", b, p)
			}
		}
	})
}

// The notifier announces the batches of a commit beside its high
// watermarks: another store's listener gets the very batches FindBatches
// would answer.
func TestNoticesCarryBatches(t *testing.T) {
	dsn := testenv.Postgres(t)
	a, b := open(t, dsn), open(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ch, err := b.Notices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := a.CreateTopic(ctx, metadata.TopicSpec{Name: "refs", Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	fc := metadata.FileCommit{Key: "v1/files/00/refs", Size: 400, Batches: []metadata.BatchCommit{
		{TopicID: tp.ID, Partition: 0, ByteOffset: 24, ByteLength: 100, RecordCount: 3, MaxTimestamp: 5, ProducerID: -1, BaseSequence: metadata.NoSequence},
		{TopicID: tp.ID, Partition: 1, ByteOffset: 124, ByteLength: 100, RecordCount: 2, MaxTimestamp: 6, ProducerID: -1, BaseSequence: metadata.NoSequence},
	}}
	if _, err := a.CommitFile(ctx, fc); err != nil {
		t.Fatal(err)
	}
	want := map[int32][]metadata.BatchRef{}
	for p := int32(0); p < 2; p++ {
		refs, _, err := b.FindBatches(ctx, tp.ID, p, 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		want[p] = refs
	}
	got := map[int32][]metadata.BatchRef{}
	for len(got) < 2 {
		select {
		case n := <-ch:
			if n.All {
				t.Fatal("an All notice")
			}
			for _, r := range n.Batches {
				got[r.Partition] = append(got[r.Partition], r)
			}
		case <-ctx.Done():
			t.Fatalf("no batch notice; got %+v", got)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("notified batches %+v\nFindBatches     %+v", got, want)
	}
}

// The notifier bounds the batches it keeps per partition, drops a
// partition's when they would go out of order, and still announces the
// high watermarks; payloads stay under NOTIFY's limit.
func TestNotifierRefsBounded(t *testing.T) {
	n := newNotifier(nil, "c", nil)
	key := strings.Repeat("k", 40)
	ref := func(p int32, base int64) metadata.BatchRef {
		return metadata.BatchRef{TopicID: 1, Partition: p, BaseOffset: base, LastOffset: base, FileKey: key, FileSize: 100, ByteLength: 10, RecordCount: 1}
	}
	for i := range int64(maxPendingRefsPerPartition + 1) {
		n.add("1:0:"+itoa(i+1), ref(0, i))
	}
	n.add("1:1:1", ref(1, 0))
	n.add("1:2:6", ref(2, 5))
	n.add("1:2:6", ref(2, 5)) // out of order: partition 2's are dropped
	channels, payloads := n.take()
	var refs []metadata.BatchRef
	hws := 0
	for i, p := range payloads {
		if len(p) > maxNoticePayload {
			t.Fatalf("payload of %d bytes", len(p))
		}
		switch channels[i] {
		case "c_batches":
			nn, ok := ParseRefsPayload(p)
			if !ok {
				t.Fatalf("bad payload %q", p)
			}
			refs = append(refs, nn.Batches...)
		case "c":
			hws += len(ParsePayload(p).Partitions)
		default:
			t.Fatalf("channel %q", channels[i])
		}
	}
	if len(refs) != 1 || refs[0].Partition != 1 {
		t.Fatalf("batches announced %+v, want partition 1's only", refs)
	}
	if hws != 3 {
		t.Fatalf("%d high watermarks announced, want 3", hws)
	}
	if channels[0] != "c_batches" {
		t.Fatalf("channels %q: the batches go first", channels)
	}
}

func itoa(i int64) string { return string(appendInt(nil, i)) }

func appendInt(b []byte, i int64) []byte { return strconv.AppendInt(b, i, 10) }
