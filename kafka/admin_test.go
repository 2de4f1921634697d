package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicConfig reads a topic's configs through kadm's DescribeTopicConfigs.
func topicConfig(t *testing.T, adm *kadm.Client, topic string) map[string]string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe %s: %v %v", topic, err, rc.Err)
	}
	out := map[string]string{}
	for _, c := range rc.Configs {
		out[c.Key] = c.MaybeValue()
	}
	return out
}

// TestAdminDeleteRecords: kadm's DeleteRecords moves a partition's log
// start (then to the high watermark with -1), ListStartOffsets sees it,
// a consumer from the start gets the first record kept, and an offset
// past the end is OFFSET_OUT_OF_RANGE.
func TestAdminDeleteRecords(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	createTopic(t, cl, "dr", 1)
	recs := sentRecords("dr", 10)
	for _, r := range recs {
		r.Partition = 0
	}
	produceAll(t, cl, recs)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "dr", Partition: 0, At: 4})
	resp, err := adm.DeleteRecords(ctx, os)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := resp.Lookup("dr", 0); !ok || r.Err != nil || r.LowWatermark != 4 {
		t.Fatalf("delete to 4: %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, "dr")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup("dr", 0); o.Offset != 4 {
		t.Fatalf("start offset %d, want 4", o.Offset)
	}
	cons := newClient(t, b, kgo.ConsumeTopics("dr"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if got := consumeN(t, cons, 6); got[0].Offset != 4 || string(got[0].Value) != string(recs[4].Value) {
		t.Fatalf("first record read at %d: %q", got[0].Offset, got[0].Value)
	}
	os = nil
	os.Add(kadm.Offset{Topic: "dr", Partition: 0, At: 99})
	resp, _ = adm.DeleteRecords(ctx, os)
	if r, _ := resp.Lookup("dr", 0); !errors.Is(r.Err, kerr.OffsetOutOfRange) {
		t.Fatalf("delete past the end: %v, want OFFSET_OUT_OF_RANGE", r.Err)
	}
	os = nil
	os.Add(kadm.Offset{Topic: "dr", Partition: 0, At: -1})
	resp, _ = adm.DeleteRecords(ctx, os)
	if r, _ := resp.Lookup("dr", 0); r.Err != nil || r.LowWatermark != 10 {
		t.Fatalf("delete to the high watermark: %+v", r)
	}
}

// TestAdminCreatePartitions: adding partitions is refused with a message
// saying floe cannot, and the topic keeps its count.
func TestAdminCreatePartitions(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "cp", 2)
	resp, err := adm.CreatePartitions(context.Background(), 2, "cp", "cp-missing")
	if err != nil {
		t.Fatal(err)
	}
	if r := resp["cp"]; !errors.Is(r.Err, kerr.InvalidRequest) || !strings.Contains(r.ErrMessage, "cannot add partitions") {
		t.Fatalf("cp: %v %q", r.Err, r.ErrMessage)
	}
	if r := resp["cp-missing"]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("cp-missing: %v", r.Err)
	}
	td, err := adm.ListTopics(context.Background(), "cp")
	if err != nil || len(td["cp"].Partitions) != 2 {
		t.Fatalf("cp now has %d partitions (%v)", len(td["cp"].Partitions), err)
	}
}

// TestAdminAlterConfigs: IncrementalAlterConfigs sets and deletes floe's
// topic keys (retention, cleanup policy, iceberg, schema), AlterConfigs
// replaces the whole set, and an unknown key or a bad value is
// INVALID_CONFIG naming the key, changing nothing.
func TestAdminAlterConfigs(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	createTopic(t, cl, "ac", 1)
	str := func(s string) *string { return &s }
	schema := `{"type":"object"}`
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: str("3600000")},
		{Op: kadm.SetConfig, Name: "cleanup.policy", Value: str("compact")},
		{Op: kadm.SetConfig, Name: "iceberg.enabled", Value: str("false")},
		{Op: kadm.SetConfig, Name: "value.schema", Value: &schema},
	}, "ac")
	if err != nil || resp[0].Err != nil {
		t.Fatalf("incremental set: %v %+v", err, resp)
	}
	want := map[string]string{"retention.ms": "3600000", "cleanup.policy": "compact", "iceberg.enabled": "false", "value.schema": schema}
	if got := topicConfig(t, adm, "ac"); !sameMap(got, want) {
		t.Fatalf("after set: %v", got)
	}
	resp, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "retention.ms"}}, "ac")
	if err != nil || resp[0].Err != nil {
		t.Fatalf("incremental delete: %v %+v", err, resp)
	}
	delete(want, "retention.ms")
	if got := topicConfig(t, adm, "ac"); !sameMap(got, want) {
		t.Fatalf("after delete: %v", got)
	}
	for _, bad := range []struct{ name, value, inMsg string }{
		{"retention.msx", "1", "retention.msx"},
		{"segment.bytes", "1", "segment.bytes"},
		{"retention.ms", "soon", "retention.ms"},
		{"value.schema", `{"type":"string"}`, "value.schema"}, // floe's schema evolution rule
	} {
		resp, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: bad.name, Value: str(bad.value)}}, "ac")
		if err != nil || !errors.Is(resp[0].Err, kerr.InvalidConfig) || !strings.Contains(resp[0].ErrMessage, bad.inMsg) {
			t.Fatalf("%s=%s: %v %v %q, want INVALID_CONFIG naming it", bad.name, bad.value, err, resp[0].Err, resp[0].ErrMessage)
		}
	}
	if got := topicConfig(t, adm, "ac"); !sameMap(got, want) {
		t.Fatalf("refused changes changed: %v", got)
	}
	// AlterConfigs (the whole set): what is not given goes (but the
	// schema, which floe never removes once set).
	resp, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.bytes", Value: str("1048576")}, {Name: "value.schema", Value: &schema}}, "ac")
	if err != nil || resp[0].Err != nil {
		t.Fatalf("alter configs: %v %+v", err, resp)
	}
	if got := topicConfig(t, adm, "ac"); !sameMap(got, map[string]string{"retention.bytes": "1048576", "value.schema": schema}) {
		t.Fatalf("after alter configs: %v", got)
	}
	resp, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "iceberg.enable", Value: str("true")}, {Name: "value.schema", Value: &schema}}, "ac")
	if err != nil || !errors.Is(resp[0].Err, kerr.InvalidConfig) || !strings.Contains(resp[0].ErrMessage, "iceberg.enable") {
		t.Fatalf("alter configs unknown key: %v %+v", err, resp)
	}
	if got := topicConfig(t, adm, "ac"); !sameMap(got, map[string]string{"retention.bytes": "1048576", "value.schema": schema}) {
		t.Fatalf("a refused change changed: %v", got)
	}
	// Broker configs do not exist in floe.
	bresp, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "log.retention.ms", Value: str("1")}}, nodeOf(t, b))
	if err != nil || !errors.Is(bresp[0].Err, kerr.InvalidRequest) {
		t.Fatalf("broker config: %v %+v", err, bresp)
	}
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestAdminDeleteOffsets: kadm's DeleteOffsets removes one partition's
// committed position of a group without members (the other stays, as
// FetchOffsets shows); a group with a live member is
// GROUP_SUBSCRIBED_TO_TOPIC, an unknown group GROUP_ID_NOT_FOUND.
func TestAdminDeleteOffsets(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	createTopic(t, cl, "od", 2)
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: "od", Partition: 0, At: 0, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: "od", Partition: 1, At: 0, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "od-group", os); err != nil {
		t.Fatal(err)
	}
	resp, err := adm.DeleteOffsets(ctx, "od-group", kadm.TopicsSet{"od": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := resp.Lookup("od", 0); !ok || e != nil {
		t.Fatalf("delete od/0: %v %v", ok, e)
	}
	got, err := adm.FetchOffsets(ctx, "od-group")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Lookup("od", 0); ok {
		t.Errorf("od/0 still has a position: %+v", got)
	}
	if o, ok := got.Lookup("od", 1); !ok || o.At != 0 {
		t.Errorf("od/1 lost its position: %+v", got)
	}
	if _, err := adm.DeleteOffsets(ctx, "no-such-group", kadm.TopicsSet{"od": {0: {}}}); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("unknown group: %v, want GROUP_ID_NOT_FOUND", err)
	}
	// A live classic member.
	gctx, cancel := context.WithCancel(ctx)
	g := startGroupConsumer(t, gctx, b, "od-live", "od")
	t.Cleanup(func() { cancel(); g.stop() })
	waitFor(t, "a stable member", func() bool { return describeGroup(t, cl, "od-live").State == "Stable" })
	resp, err = adm.DeleteOffsets(ctx, "od-live", kadm.TopicsSet{"od": {1: {}}})
	if e, _ := resp.Lookup("od", 1); err != nil || !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Errorf("live group: %v %v, want GROUP_SUBSCRIBED_TO_TOPIC", err, e)
	}
}
