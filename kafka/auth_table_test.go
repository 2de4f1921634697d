package kafka_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/kbatch"
)

// kafkaCase is one served API: a request that a principal holding grants
// may make, and how its answer shows data.
type kafkaCase struct {
	key    kmsg.Key
	grants []grant
	req    func() kmsg.Request
	// open: answered before authentication; anyAuth: any authenticated
	// principal may call it.
	open, anyAuth bool
	// listed counts what a listing answer shows (a principal without the
	// ACL sees nothing, rather than an error).
	listed func(kmsg.Response) int
}

type grant struct {
	op  auth.Operation
	res auth.Resource
}

func kafkaCases() []kafkaCase {
	top, grp, cl := auth.Topic, auth.Group, auth.Cluster()
	str := kmsg.StringPtr
	return []kafkaCase{
		{key: kmsg.Produce, grants: []grant{{auth.OpWrite, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrProduceRequest()
			r.Acks, r.TimeoutMillis = -1, 5000
			tp := kmsg.NewProduceRequestTopic()
			tp.Topic = "t"
			p := kmsg.NewProduceRequestTopicPartition()
			p.Records = encodeBatchFor(1)
			tp.Partitions = append(tp.Partitions, p)
			r.Topics = append(r.Topics, tp)
			return r
		}},
		{key: kmsg.Fetch, grants: []grant{{auth.OpRead, top("t")}}, req: func() kmsg.Request {
			return fetchReq("t", 1, 1<<20, 1<<20, 1, 10)
		}},
		{key: kmsg.ListOffsets, grants: []grant{{auth.OpDescribe, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			tp := kmsg.NewListOffsetsRequestTopic()
			tp.Topic = "t"
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Timestamp = -1
			tp.Partitions = append(tp.Partitions, p)
			r.Topics = append(r.Topics, tp)
			return r
		}},
		{key: kmsg.Metadata, grants: []grant{{auth.OpDescribe, top("t")}}, req: func() kmsg.Request {
			return kmsg.NewPtrMetadataRequest() // all topics
		}, listed: func(r kmsg.Response) int { return len(r.(*kmsg.MetadataResponse).Topics) }},
		{key: kmsg.OffsetCommit, grants: []grant{{auth.OpRead, grp("g")}, {auth.OpRead, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = "g", -1
			tp := kmsg.NewOffsetCommitRequestTopic()
			tp.Topic = "t"
			p := kmsg.NewOffsetCommitRequestTopicPartition()
			p.Offset = 1
			tp.Partitions = append(tp.Partitions, p)
			r.Topics = append(r.Topics, tp)
			return r
		}},
		{key: kmsg.OffsetFetch, grants: []grant{{auth.OpDescribe, grp("g")}, {auth.OpDescribe, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "g"
			r.Group, r.Groups = "g", append(r.Groups, g)
			return r
		}},
		{key: kmsg.FindCoordinator, grants: []grant{{auth.OpDescribe, grp("g")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKey, r.CoordinatorKeys = "g", []string{"g"}
			return r
		}},
		{key: kmsg.JoinGroup, grants: []grant{{auth.OpRead, grp("j")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = "j", 10000, 10000, "consumer"
			r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
			return r
		}},
		{key: kmsg.Heartbeat, grants: []grant{{auth.OpRead, grp("j")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID = "j", "m"
			return r
		}},
		{key: kmsg.LeaveGroup, grants: []grant{{auth.OpRead, grp("j")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrLeaveGroupRequest()
			r.Group, r.MemberID = "j", "m"
			r.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
			return r
		}},
		{key: kmsg.SyncGroup, grants: []grant{{auth.OpRead, grp("j")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrSyncGroupRequest()
			r.Group, r.MemberID = "j", "m"
			return r
		}},
		{key: kmsg.DescribeGroups, grants: []grant{{auth.OpDescribe, grp("g")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{"g"}
			return r
		}},
		{key: kmsg.ConsumerGroupDescribe, grants: []grant{{auth.OpDescribe, grp("g")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.Groups = []string{"g"}
			return r
		}},
		{key: kmsg.DescribeProducers, grants: []grant{{auth.OpRead, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			tp := kmsg.NewDescribeProducersRequestTopic()
			tp.Topic, tp.Partitions = "t", []int32{0}
			r.Topics = append(r.Topics, tp)
			return r
		}},
		{key: kmsg.ListGroups, grants: []grant{{auth.OpDescribe, grp("g")}}, req: func() kmsg.Request {
			return kmsg.NewPtrListGroupsRequest()
		}, listed: func(r kmsg.Response) int { return len(r.(*kmsg.ListGroupsResponse).Groups) }},
		{key: kmsg.SASLHandshake, open: true, req: func() kmsg.Request {
			r := kmsg.NewPtrSASLHandshakeRequest()
			r.Mechanism = "PLAIN"
			return r
		}},
		{key: kmsg.ApiVersions, open: true, req: func() kmsg.Request { return kmsg.NewPtrApiVersionsRequest() }},
		{key: kmsg.CreateTopics, grants: []grant{{auth.OpCreate, top("new")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			tp := kmsg.NewCreateTopicsRequestTopic()
			tp.Topic, tp.NumPartitions, tp.ReplicationFactor = "new", 1, -1
			r.Topics, r.TimeoutMillis = append(r.Topics, tp), 5000
			return r
		}},
		{key: kmsg.DeleteTopics, grants: []grant{{auth.OpDelete, top("del")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			r.TopicNames, r.TimeoutMillis = []string{"del"}, 5000
			r.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: str("del")}}
			return r
		}},
		{key: kmsg.DeleteRecords, grants: []grant{{auth.OpDelete, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			tp := kmsg.NewDeleteRecordsRequestTopic()
			tp.Topic = "t"
			tp.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 1}}
			r.Topics, r.TimeoutMillis = append(r.Topics, tp), 5000
			return r
		}},
		{key: kmsg.InitProducerID, anyAuth: true, req: func() kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.ProducerID, r.ProducerEpoch = -1, -1
			return r
		}},
		{key: kmsg.OffsetForLeaderEpoch, grants: []grant{{auth.OpDescribe, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = -1
			tp := kmsg.NewOffsetForLeaderEpochRequestTopic()
			tp.Topic = "t"
			tp.Partitions = []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1}}
			r.Topics = append(r.Topics, tp)
			return r
		}},
		{key: kmsg.DescribeACLs, grants: []grant{{auth.OpDescribe, cl}}, req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		}},
		{key: kmsg.CreateACLs, grants: []grant{{auth.OpAlter, cl}}, req: func() kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			r.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t",
				ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral, Principal: "User:carol", Host: "*",
				Operation: kmsg.ACLOperationRead, PermissionType: kmsg.ACLPermissionTypeAllow}}
			return r
		}},
		{key: kmsg.DeleteACLs, grants: []grant{{auth.OpAlter, cl}}, req: func() kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			r.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: kmsg.ACLResourceTypeAny, ResourcePatternType: kmsg.ACLResourcePatternTypeAny,
				Principal: str("User:carol"), Operation: kmsg.ACLOperationAny, PermissionType: kmsg.ACLPermissionTypeAny}}
			return r
		}},
		{key: kmsg.DescribeConfigs, grants: []grant{{auth.OpDescribeConfigs, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			r.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t"}}
			return r
		}},
		{key: kmsg.AlterConfigs, grants: []grant{{auth.OpAlterConfigs, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrAlterConfigsRequest()
			r.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t",
				Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: str("86400000")}}}}
			return r
		}},
		{key: kmsg.SASLAuthenticate, open: true, req: func() kmsg.Request { return kmsg.NewPtrSASLAuthenticateRequest() }},
		{key: kmsg.CreatePartitions, grants: []grant{{auth.OpAlter, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			r.Topics, r.TimeoutMillis = []kmsg.CreatePartitionsRequestTopic{{Topic: "t", Count: 2}}, 5000
			return r
		}},
		{key: kmsg.DeleteGroups, grants: []grant{{auth.OpDelete, grp("gdel")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{"gdel"}
			return r
		}},
		{key: kmsg.IncrementalAlterConfigs, grants: []grant{{auth.OpAlterConfigs, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			r.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t",
				Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "retention.ms", Value: str("3600000")}}}}
			return r
		}},
		{key: kmsg.OffsetDelete, grants: []grant{{auth.OpDelete, grp("g")}, {auth.OpRead, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = "g"
			r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			return r
		}},
		{key: kmsg.DescribeUserSCRAMCredentials, grants: []grant{{auth.OpDescribe, cl}}, req: func() kmsg.Request {
			return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		}},
		{key: kmsg.AlterUserSCRAMCredentials, grants: []grant{{auth.OpAlter, cl}}, req: func() kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			r.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "dave", Mechanism: 1, Iterations: 4096,
				Salt: []byte("salt"), SaltedPassword: make([]byte, 32)}}
			return r
		}},
		{key: kmsg.DescribeCluster, anyAuth: true, req: func() kmsg.Request { return kmsg.NewPtrDescribeClusterRequest() }},
		{key: kmsg.ConsumerGroupHeartbeat, grants: []grant{{auth.OpRead, grp("k")}, {auth.OpDescribe, top("t")}}, req: func() kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberEpoch, r.RebalanceTimeoutMillis, r.SubscribedTopicNames = "k", 0, 10000, []string{"t"}
			r.MemberID = "m1-0123456789abcdef"
			return r
		}},
	}
}

// encodeBatchFor is a batch of n records.
func encodeBatchFor(n int) []byte {
	recs := make([]kbatch.Record, n)
	for i := range recs {
		recs[i] = kbatch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte("v")}
	}
	b, err := kbatch.Encode(recs, kbatch.DefaultEncodeOptions())
	if err != nil {
		panic(err)
	}
	return b
}

// TestKafkaAuthTable calls every served API as (a) an unauthenticated
// connection, (b) bob, without the ACL, (c) alice, with it: (a) gets only
// SASL_AUTHENTICATION_FAILED (and a closed connection), (b) only
// authorization errors (or an empty listing), neither changes anything;
// (c) gets no authorization error.
func TestKafkaAuthTable(t *testing.T) {
	b := startAuthBroker(t)
	ctx := context.Background()
	root := saslClient(t, b.addr, "SCRAM-SHA-512", "root", "pw-root", kgo.DefaultProduceTopic("t"))
	for _, name := range []string{"t", "del"} {
		req := kmsg.NewPtrCreateTopicsRequest()
		tp := kmsg.NewCreateTopicsRequestTopic()
		tp.Topic, tp.NumPartitions, tp.ReplicationFactor = name, 1, -1
		req.Topics = append(req.Topics, tp)
		if _, err := req.RequestWith(ctx, root); err != nil {
			t.Fatal(err)
		}
	}
	if err := root.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}, &kgo.Record{Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"g", "gdel"} {
		oc := kafkaCases()[4].req().(*kmsg.OffsetCommitRequest)
		oc.Group = g
		if _, err := oc.RequestWith(ctx, root); err != nil {
			t.Fatal(err)
		}
	}
	versions := servedVersions(t, b.addr)
	cases := kafkaCases()
	covered := map[int16]bool{}
	for _, c := range cases {
		covered[c.key.Int16()] = true
	}
	for key := range versions {
		if !covered[key] {
			t.Errorf("%s is served but not in the table", kmsg.NameForKey(key))
		}
	}
	for _, c := range cases {
		t.Run(kmsg.NameForKey(c.key.Int16()), func(t *testing.T) {
			v, ok := versions[c.key.Int16()]
			if !ok {
				t.Fatalf("not served")
			}
			call := func(user string) (kmsg.Response, *rawConn, error) {
				conn := dialRaw(t, b.addr)
				if user != "" {
					plainLogin(t, conn, user)
				}
				req := c.req()
				req.SetVersion(v)
				resp, err := roundTrip(conn, req, 7)
				if err != nil && user != "" {
					t.Fatalf("%s: %v", user, err)
				}
				return resp, conn, err
			}
			if c.open {
				return // answered before authentication: TestKafkaSASL
			}
			// (a) unauthenticated.
			before := b.snapshot(t)
			resp, conn, err := call("")
			want := kmsg.ResponseForKey(c.key.Int16())
			want.SetVersion(v)
			// Byte for byte the empty answer with SASL_AUTHENTICATION_FAILED
			// where the version has a top-level code; else no answer.
			var codes []int16
			if err == nil {
				errorCodes(reflect.ValueOf(resp), &codes)
				if len(codes) != 1 || codes[0] != kerr.SaslAuthenticationFailed.Code ||
					string(resp.AppendTo(nil)) != string(mustAuthFailed(want).AppendTo(nil)) {
					t.Errorf("anonymous: %+v, want only SASL_AUTHENTICATION_FAILED", resp)
				}
				if _, _, err := conn.recv(); err == nil {
					t.Errorf("anonymous: connection still open")
				}
			}
			// (b) bob, without the ACL.
			resp, _, _ = call("bob")
			codes = codes[:0]
			errorCodes(reflect.ValueOf(resp), &codes)
			switch {
			case c.anyAuth:
				for _, code := range codes {
					if isAuthCode(code) {
						t.Errorf("bob: %v, want allowed (any principal)", codes)
					}
				}
			case c.listed != nil:
				if n := c.listed(resp); n != 0 {
					t.Errorf("bob sees %d entries", n)
				}
			default:
				denied := false
				for _, code := range codes {
					denied = denied || isAuthCode(code)
					if code != 0 && !isAuthCode(code) {
						t.Errorf("bob: code %d besides the authorization error", code)
					}
				}
				if !denied {
					t.Errorf("bob: no authorization error in %+v", resp)
				}
			}
			if after := b.snapshot(t); after != before && !c.anyAuth {
				t.Errorf("refused calls changed the store:\nbefore %s\nafter %s", before, after)
			}
			// (c) alice, with it.
			for _, g := range c.grants {
				b.st.Allow("User:alice", g.op, g.res)
			}
			resp, _, _ = call("alice")
			codes = codes[:0]
			errorCodes(reflect.ValueOf(resp), &codes)
			for _, code := range codes {
				if isAuthCode(code) || code == kerr.SaslAuthenticationFailed.Code {
					t.Errorf("alice with %v: %v", c.grants, codes)
				}
			}
			if c.listed != nil && c.listed(resp) != 1 {
				t.Errorf("alice sees %d entries, want 1", c.listed(resp))
			}
			if _, err := b.st.DeleteACLs(ctx, auth.ACLFilter{Principal: "User:alice"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// mustAuthFailed is the refusal of an unauthenticated request: the
// empty answer with SASL_AUTHENTICATION_FAILED where it has a top-level
// code.
func mustAuthFailed(resp kmsg.Response) kmsg.Response {
	v := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
	if v.IsValid() && v.CanSet() {
		v.SetInt(int64(kerr.SaslAuthenticationFailed.Code))
	}
	return resp
}

// servedVersions asks the broker (ApiVersions) what it serves.
func servedVersions(t *testing.T, addr string) map[int16]int16 {
	t.Helper()
	conn := dialRaw(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(3)
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	resp, err := roundTrip(conn, req, 1)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int16]int16{}
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		out[k.ApiKey] = k.MaxVersion
	}
	return out
}
