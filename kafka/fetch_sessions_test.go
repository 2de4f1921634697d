package kafka_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
)

// answered is a fetch answer's partitions: "topic/partition" to records
// bytes, and the error codes.
func answered(r *kmsg.FetchResponse) (recs map[string]int, codes map[string]int16) {
	recs, codes = map[string]int{}, map[string]int16{}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			k := fmt.Sprintf("%s/%d", t.Topic, p.Partition)
			recs[k], codes[k] = len(p.RecordBatches), p.ErrorCode
		}
	}
	return recs, codes
}

// TestIncrementalFetchOmitsUnchanged: a full fetch at epoch 0 opens a
// session; an incremental fetch naming nothing answers none of the
// quiet partitions; after an append to one, only that one is answered,
// with its records; a forgotten partition is no longer answered; epochs
// are checked.
func TestIncrementalFetchOmitsUnchanged(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	ctx := context.Background()
	createTopic(t, cl, "inc", 3)
	for p := range int32(3) {
		produceRaw(t, cl, "inc", p, encodeBatch(t, 5, -1, -1, -1, 1700000000000))
	}
	full := fetchReq("inc", 3, 1<<20, 1<<20, 1, 0)
	full.SessionEpoch = 0
	for i := range full.Topics[0].Partitions {
		full.Topics[0].Partitions[i].FetchOffset = 5 // at the end: no records
	}
	resp, err := full.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 || resp.SessionID == 0 {
		t.Fatalf("full fetch: %v, code %d, session %d", err, resp.ErrorCode, resp.SessionID)
	}
	if recs, _ := answered(resp); len(recs) != 3 {
		t.Fatalf("the full answer has %d partitions, want 3", len(recs))
	}
	id := resp.SessionID
	inc := func(epoch int32, mutate func(*kmsg.FetchRequest)) *kmsg.FetchResponse {
		t.Helper()
		r := kmsg.NewPtrFetchRequest()
		r.SessionID, r.SessionEpoch, r.MaxWaitMillis, r.MinBytes, r.MaxBytes = id, epoch, 0, 1, 1<<20
		if mutate != nil {
			mutate(r)
		}
		resp, err := r.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := inc(1, nil); r.ErrorCode != 0 || r.SessionID != id || len(r.Topics) != 0 {
		t.Fatalf("a quiet incremental fetch: code %d, session %d, topics %+v", r.ErrorCode, r.SessionID, r.Topics)
	}
	produceRaw(t, cl, "inc", 1, encodeBatch(t, 2, -1, -1, -1, 1700000000000))
	r := inc(2, nil)
	recs, _ := answered(r)
	if len(recs) != 1 || recs["inc/1"] == 0 || r.Topics[0].Partitions[0].HighWatermark != 7 {
		t.Fatalf("after an append to partition 1: %v (want inc/1 alone, with records)", recs)
	}
	// The client moves partition 1 on and forgets partition 2; an append
	// to partition 2 is not answered, nor partition 1 (at its end).
	produceRaw(t, cl, "inc", 2, encodeBatch(t, 1, -1, -1, -1, 1700000000000))
	r = inc(3, func(r *kmsg.FetchRequest) {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "inc"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = 1, 7, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		r.ForgottenTopics = append(r.ForgottenTopics, kmsg.FetchRequestForgottenTopic{Topic: "inc", Partitions: []int32{2}})
	})
	if recs, _ := answered(r); len(recs) != 0 {
		t.Fatalf("after moving on and forgetting: %v, want nothing", recs)
	}
	if r := inc(3, nil); r.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("a replayed epoch: code %d", r.ErrorCode)
	}
	if r := inc(4, nil); r.ErrorCode != 0 {
		t.Fatalf("epoch 4 after a refused epoch: code %d", r.ErrorCode)
	}
	st := b.srv.FetchSessions()
	if st.Open != 1 || st.Partitions != 2 || st.Created != 1 || st.Incremental != 4 {
		t.Fatalf("stats %+v", st)
	}
	// Epoch -1 closes it.
	closing := fetchReq("inc", 1, 1<<20, 1<<20, 1, 0)
	closing.SessionID, closing.SessionEpoch = id, -1
	if r, err := closing.RequestWith(ctx, cl); err != nil || r.SessionID != 0 || r.ErrorCode != 0 {
		t.Fatalf("closing fetch: %v %+v", err, r)
	}
	if r := inc(5, nil); r.ErrorCode != kerr.FetchSessionIDNotFound.Code {
		t.Fatalf("a closed session: code %d", r.ErrorCode)
	}
}

// TestKgoFetchSessions: franz-go, which asks for sessions, reads three
// partitions through one, exactly, while more is produced; its fetches
// after the first are incremental.
func TestKgoFetchSessions(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "kgo-sess", 3)
	produce := func(from, n int) {
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: "kgo-sess", Partition: int32((from + i) % 3), Value: fmt.Appendf(nil, "v%03d", from+i)}
		}
		pcl := newClient(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err := pcl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(0, 30)
	cons := newClient(t, b, kgo.ConsumeTopics("kgo-sess"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	var got []string
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for len(got) < 60 && ctx.Err() == nil {
		fs := cons.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		if len(got) == 30 {
			produce(30, 30) // while the session is open
		}
	}
	sort.Strings(got)
	for i, v := range got {
		if v != fmt.Sprintf("v%03d", i) {
			t.Fatalf("record %d is %s (%d read)", i, v, len(got))
		}
	}
	if len(got) != 60 {
		t.Fatalf("read %d records, want 60", len(got))
	}
	if st := b.srv.FetchSessions(); st.Created == 0 || st.Incremental == 0 {
		t.Fatalf("franz-go fetched without a session: %+v", st)
	}
}

// TestFetchSessionAuthorized: READ is checked at every fetch for each
// partition of the session, also those the request does not name: a
// denied one is answered TOPIC_AUTHORIZATION_FAILED each time (an error
// is always answered), the allowed one only when it changes.
func TestFetchSessionAuthorized(t *testing.T) {
	b := startAuthBroker(t)
	ctx := context.Background()
	root := saslClient(t, b.addr, "SCRAM-SHA-512", "root", "pw-root")
	for _, name := range []string{"sa", "sb"} {
		createTopic(t, root, name, 1)
		produceRaw(t, root, name, 0, encodeBatch(t, 3, -1, -1, -1, 1700000000000))
	}
	b.st.Allow("User:alice", auth.OpRead, auth.Topic("sa"))
	alice := saslClient(t, b.addr, "SCRAM-SHA-512", "alice", "pw-alice")
	full := fetchReq("sa", 1, 1<<20, 1<<20, 1, 0)
	full.SessionEpoch = 0
	sb := fetchReq("sb", 1, 1<<20, 1<<20, 1, 0)
	full.Topics = append(full.Topics, sb.Topics...)
	resp, err := full.RequestWith(ctx, alice)
	if err != nil || resp.SessionID == 0 {
		t.Fatalf("full fetch: %v %+v", err, resp)
	}
	recs, codes := answered(resp)
	if recs["sa/0"] == 0 || codes["sa/0"] != 0 || codes["sb/0"] != kerr.TopicAuthorizationFailed.Code || recs["sb/0"] != 0 {
		t.Fatalf("full answer: records %v, codes %v", recs, codes)
	}
	for epoch := int32(1); epoch <= 2; epoch++ {
		r := kmsg.NewPtrFetchRequest()
		r.SessionID, r.SessionEpoch, r.MaxWaitMillis = resp.SessionID, epoch, 0
		if epoch == 1 { // sa moves on to its end
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "sa"
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.PartitionMaxBytes = 3, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
		}
		ir, err := r.RequestWith(ctx, alice)
		if err != nil || ir.ErrorCode != 0 {
			t.Fatalf("epoch %d: %v %+v", epoch, err, ir)
		}
		recs, codes := answered(ir)
		if len(codes) != 1 || codes["sb/0"] != kerr.TopicAuthorizationFailed.Code || recs["sb/0"] != 0 {
			t.Fatalf("epoch %d: records %v, codes %v (want sb/0 denied alone)", epoch, recs, codes)
		}
	}
}
