package kafka_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
)

// topicIDsOf is the Kafka topic id of each name (Metadata, through kadm).
func topicIDsOf(t *testing.T, cl *kgo.Client, names ...string) map[string][16]byte {
	t.Helper()
	td, err := kadm.NewClient(cl).ListTopics(context.Background(), names...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][16]byte{}
	for _, n := range names {
		if td[n].Err != nil {
			t.Fatalf("topic %s: %v", n, td[n].Err)
		}
		out[n] = td[n].ID
	}
	return out
}

// commitTopic is a v10 OffsetCommit topic by id: partition p at offsets[p].
func commitTopic(id [16]byte, offsets ...int64) kmsg.OffsetCommitRequestTopic {
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.TopicID = id
	for p, o := range offsets {
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset, cp.Metadata = int32(p), o, kmsg.StringPtr("md")
		ct.Partitions = append(ct.Partitions, cp)
	}
	return ct
}

// commitV is an OffsetCommit of group (no members) at version v; its
// answer's partition codes by topic id.
func commitV(t *testing.T, c *rawConn, v int16, group string, topics ...kmsg.OffsetCommitRequestTopic) map[[16]byte][]int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.SetVersion(v)
	req.Group, req.Generation, req.Topics = group, -1, topics
	resp, err := roundTrip(c, req, 11)
	if err != nil {
		t.Fatal(err)
	}
	out := map[[16]byte][]int16{}
	for _, rt := range resp.(*kmsg.OffsetCommitResponse).Topics {
		for _, rp := range rt.Partitions {
			out[rt.TopicID] = append(out[rt.TopicID], rp.ErrorCode)
		}
	}
	return out
}

// fetchV is group's OffsetFetch at version v (v8 and up) for topics (nil:
// all of them).
func fetchV(t *testing.T, c *rawConn, v int16, group string, topics []kmsg.OffsetFetchRequestGroupTopic) kmsg.OffsetFetchResponseGroup {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.SetVersion(v)
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group, g.Topics = group, topics
	req.Groups = append(req.Groups, g)
	resp, err := roundTrip(c, req, 12)
	if err != nil {
		t.Fatal(err)
	}
	gs := resp.(*kmsg.OffsetFetchResponse).Groups
	if len(gs) != 1 {
		t.Fatalf("OffsetFetch v%d: %d groups, want 1", v, len(gs))
	}
	return gs[0]
}

// byID indexes an OffsetFetch answer's topics by id.
func byID(g kmsg.OffsetFetchResponseGroup) map[[16]byte][]kmsg.OffsetFetchResponseGroupTopicPartition {
	out := map[[16]byte][]kmsg.OffsetFetchResponseGroupTopicPartition{}
	for _, rt := range g.Topics {
		out[rt.TopicID] = rt.Partitions
	}
	return out
}

// unknownIDs are topic ids that name no topic: one of floe's form, one
// not.
var unknownIDs = [][16]byte{{'f', 'l', 'o', 'e', 8: 0x7f, 15: 1}, {1, 2, 3}}

// TestOffsetsByTopicID: OffsetCommit and OffsetFetch v10 name topics by
// id: known ids commit and read back, ids that name no topic answer
// UNKNOWN_TOPIC_ID, answers carry the ids, v9 by name reads the same
// positions. ApiVersions lists OffsetFetch v10 and OffsetCommit only up
// to v9 (v10 is served unasked, as Kafka 4.1's unstable version).
func TestOffsetsByTopicID(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "ids", 2)
	id := topicIDsOf(t, cl, "ids")["ids"]
	if v := servedVersions(t, b.addr); v[kmsg.OffsetCommit.Int16()] != 9 || v[kmsg.OffsetFetch.Int16()] != 10 {
		t.Fatalf("ApiVersions: OffsetCommit up to v%d, OffsetFetch up to v%d, want 9 and 10", v[kmsg.OffsetCommit.Int16()], v[kmsg.OffsetFetch.Int16()])
	}
	c := dialRaw(t, b.addr)
	codes := commitV(t, c, 10, "gid", commitTopic(id, 5, 7), commitTopic(unknownIDs[0], 1), commitTopic(unknownIDs[1], 1))
	if got := codes[id]; len(got) != 2 || got[0] != 0 || got[1] != 0 {
		t.Fatalf("v10 commit by id: codes %v, want [0 0]", got)
	}
	for _, u := range unknownIDs {
		if got := codes[u]; len(got) != 1 || got[0] != kerr.UnknownTopicID.Code {
			t.Fatalf("v10 commit of unknown id %x: codes %v, want UNKNOWN_TOPIC_ID", u, got)
		}
	}

	want := func(label string, ps []kmsg.OffsetFetchResponseGroupTopicPartition) {
		t.Helper()
		if len(ps) != 2 || ps[0].Offset != 5 || ps[1].Offset != 7 || ps[0].ErrorCode != 0 || ps[1].ErrorCode != 0 ||
			ps[0].Metadata == nil || *ps[0].Metadata != "md" {
			t.Fatalf("%s: %+v, want offsets 5 and 7 with metadata md", label, ps)
		}
	}
	named := fetchV(t, c, 10, "gid", []kmsg.OffsetFetchRequestGroupTopic{
		{TopicID: id, Partitions: []int32{0, 1}}, {TopicID: unknownIDs[0], Partitions: []int32{0, 3}}})
	got := byID(named)
	want("v10 fetch by id", got[id])
	if ps := got[unknownIDs[0]]; len(ps) != 2 || ps[0].ErrorCode != kerr.UnknownTopicID.Code || ps[1].ErrorCode != kerr.UnknownTopicID.Code || ps[0].Offset != -1 {
		t.Fatalf("v10 fetch of an unknown id: %+v, want UNKNOWN_TOPIC_ID in each partition", ps)
	}
	all := fetchV(t, c, 10, "gid", nil)
	if len(all.Topics) != 1 {
		t.Fatalf("v10 fetch of all topics: %+v", all.Topics)
	}
	want("v10 fetch of all topics", byID(all)[id])

	// v9, by name, unchanged: the names on the wire, the same positions.
	v9 := fetchV(t, c, 9, "gid", []kmsg.OffsetFetchRequestGroupTopic{{Topic: "ids", Partitions: []int32{0, 1}}})
	if len(v9.Topics) != 1 || v9.Topics[0].Topic != "ids" {
		t.Fatalf("v9 fetch by name: %+v", v9.Topics)
	}
	want("v9 fetch by name", v9.Topics[0].Partitions)
	if codes := commitV(t, c, 9, "gid9", kmsg.OffsetCommitRequestTopic{Topic: "ids",
		Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 1, Offset: 2}}}); len(codes) != 1 {
		t.Fatalf("v9 commit by name: %v", codes)
	}
	if ps := fetchV(t, c, 10, "gid9", []kmsg.OffsetFetchRequestGroupTopic{{TopicID: id, Partitions: []int32{1}}}).Topics[0].Partitions; ps[0].Offset != 2 {
		t.Fatalf("v10 fetch of a v9 commit: %+v", ps)
	}
}

// TestOffsetsByTopicIDAuthz: with ACLs on, a v10 commit or fetch by id is
// checked as the topic the id names (READ to commit, DESCRIBE to fetch):
// a topic without the ACL answers TOPIC_AUTHORIZATION_FAILED with its id
// and is not committed, an unknown id UNKNOWN_TOPIC_ID, and a principal
// without the group GROUP_AUTHORIZATION_FAILED for each topic, its id
// given back.
func TestOffsetsByTopicIDAuthz(t *testing.T) {
	b := startAuthBroker(t)
	root := saslClient(t, b.addr, "SCRAM-SHA-512", "root", "pw-root")
	ctx := context.Background()
	if _, err := kadm.NewClient(root).CreateTopics(ctx, 1, -1, nil, "open", "secret"); err != nil {
		t.Fatal(err)
	}
	ids := topicIDsOf(t, root, "open", "secret")
	open, secret, unknown := ids["open"], ids["secret"], unknownIDs[0]
	for _, op := range []auth.Operation{auth.OpRead, auth.OpDescribe} {
		b.st.Allow("User:alice", op, auth.Group("g"))
		b.st.Allow("User:alice", op, auth.Topic("open"))
	}

	alice := dialRaw(t, b.addr)
	plainLogin(t, alice, "alice")
	codes := commitV(t, alice, 10, "g", commitTopic(open, 3), commitTopic(secret, 3), commitTopic(unknown, 3))
	if codes[open][0] != 0 || codes[secret][0] != kerr.TopicAuthorizationFailed.Code || codes[unknown][0] != kerr.UnknownTopicID.Code {
		t.Fatalf("alice's v10 commit: %v, want open 0, secret TOPIC_AUTHORIZATION_FAILED, unknown UNKNOWN_TOPIC_ID", codes)
	}
	got := byID(fetchV(t, alice, 10, "g", []kmsg.OffsetFetchRequestGroupTopic{
		{TopicID: open, Partitions: []int32{0}}, {TopicID: secret, Partitions: []int32{0}}, {TopicID: unknown, Partitions: []int32{0}}}))
	if ps := got[open]; len(ps) != 1 || ps[0].Offset != 3 || ps[0].ErrorCode != 0 {
		t.Fatalf("alice's v10 fetch of open: %+v", ps)
	}
	if ps := got[secret]; len(ps) != 1 || ps[0].Offset != -1 || ps[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice's v10 fetch of secret: %+v", ps)
	}
	if ps := got[unknown]; len(ps) != 1 || ps[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("alice's v10 fetch of an unknown id: %+v", ps)
	}
	if all := fetchV(t, alice, 10, "g", nil); len(all.Topics) != 1 || all.Topics[0].TopicID != open {
		t.Fatalf("alice's v10 fetch of all topics: %+v, want open only", all.Topics)
	}

	bob := dialRaw(t, b.addr)
	plainLogin(t, bob, "bob")
	if codes := commitV(t, bob, 10, "g", commitTopic(open, 9)); len(codes[open]) != 1 || codes[open][0] != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("bob's v10 commit: %v, want GROUP_AUTHORIZATION_FAILED for open's id", codes)
	}

	rc := dialRaw(t, b.addr)
	plainLogin(t, rc, "root")
	got = byID(fetchV(t, rc, 10, "g", nil))
	if len(got) != 1 || got[open][0].Offset != 3 {
		t.Fatalf("positions of g after the refused commits: %+v, want open at 3 only", got)
	}
}

// TestMetadataByTopicIDEmptyName: a Metadata topic given by id with an
// empty (not null) name, as the Java client 4.1 asks for the topics a
// KIP-848 regex subscription was assigned, is looked up by its id; an
// unknown id is UNKNOWN_TOPIC_ID. (It answered an error for the name "",
// so the Java consumer never learned its topics' names.)
func TestMetadataByTopicIDEmptyName(t *testing.T) {
	b := startBroker(t, nil)
	cl := newClient(t, b)
	createTopic(t, cl, "byid", 3)
	id := topicIDsOf(t, cl, "byid")["byid"]
	c := dialRaw(t, b.addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics = []kmsg.MetadataRequestTopic{{TopicID: id, Topic: kmsg.StringPtr("")}, {TopicID: unknownIDs[0], Topic: kmsg.StringPtr("")}}
	resp, err := roundTrip(c, req, 5)
	if err != nil {
		t.Fatal(err)
	}
	ts := resp.(*kmsg.MetadataResponse).Topics
	if len(ts) != 2 {
		t.Fatalf("Metadata by id: %d topics, want 2", len(ts))
	}
	for _, mt := range ts {
		switch mt.TopicID {
		case id:
			if mt.ErrorCode != 0 || mt.Topic == nil || *mt.Topic != "byid" || len(mt.Partitions) != 3 {
				t.Fatalf("Metadata of byid's id: code %d, name %v, %d partitions", mt.ErrorCode, mt.Topic, len(mt.Partitions))
			}
		case unknownIDs[0]:
			if mt.ErrorCode != kerr.UnknownTopicID.Code {
				t.Fatalf("Metadata of an unknown id: code %d, want UNKNOWN_TOPIC_ID", mt.ErrorCode)
			}
		default:
			t.Fatalf("Metadata answered id %x, not asked for", mt.TopicID)
		}
	}
}
