package agent

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
)

// TestEveryMethodHasARule walks floe's service descriptors: a method
// without an authorization rule (one added to the proto and forgotten
// here) fails, as would a rule that does not accept its own request type.
func TestEveryMethodHasARule(t *testing.T) {
	fd := floev1.File_floe_v1_floe_proto
	n := 0
	protoregistry.GlobalFiles.RangeFilesByPackage("floe.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			sd := f.Services().Get(i)
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				full := "/" + string(sd.FullName()) + "/" + string(md.Name())
				mt, err := protoregistry.GlobalTypes.FindMessageByName(md.Input().FullName())
				if err != nil {
					t.Fatal(err)
				}
				_, ruled := rpcRules[full]
				if !ruled && !(sd.FullName() == "floe.v1.AdminService") {
					t.Errorf("%s has no authorization rule in rpcRules", full)
					continue
				}
				if acc := rpcAccessFor(full, mt.New().Interface()); acc.deny {
					t.Errorf("%s: its rule refuses its own request type %s", full, md.Input().FullName())
				}
				n++
			}
		}
		return true
	})
	if fd.Services().Len() < 3 || n < 22 {
		t.Fatalf("walked %d methods of %d services: the descriptors were not found", n, fd.Services().Len())
	}
	for m := range rpcRules {
		if _, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(methodName(m))); err != nil {
			t.Errorf("rule for %s, a method that does not exist", m)
		}
	}
}

// methodName turns "/floe.v1.S/M" into "floe.v1.S.M".
func methodName(full string) string {
	b := []byte(full[1:])
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '/' {
			b[i] = '.'
			break
		}
	}
	return string(b)
}

func TestRPCAccessFor(t *testing.T) {
	type c = rpcCheck
	top, grp := auth.Topic, auth.Group
	for _, tc := range []struct {
		method string
		req    proto.Message
		want   rpcAccess
	}{
		{"/floe.v1.TopicService/CreateTopic", &floev1.CreateTopicRequest{Name: "t"}, need(c{auth.OpCreate, top("t"), true})},
		{"/floe.v1.TopicService/DeleteTopic", &floev1.DeleteTopicRequest{Name: "t"}, need(c{op: auth.OpDelete, res: top("t")})},
		{"/floe.v1.TopicService/ListTopics", &floev1.ListTopicsRequest{}, rpcAccess{filter: filterTopics}},
		{"/floe.v1.TopicService/AlterTopicConfig", &floev1.AlterTopicConfigRequest{Name: "t"}, need(c{op: auth.OpAlterConfigs, res: top("t")})},
		{"/floe.v1.TopicService/DeleteRecords", &floev1.DeleteRecordsRequest{Topic: "t"}, need(c{op: auth.OpDelete, res: top("t")})},
		{"/floe.v1.TopicService/DescribePlacement", &floev1.DescribePlacementRequest{Topic: "t"}, need(c{op: auth.OpDescribe, res: top("t")})},
		{"/floe.v1.LogService/ProduceStream", &floev1.ProduceStreamRequest{Request: &floev1.ProduceRequest{Topic: "t"}}, need(c{op: auth.OpWrite, res: top("t")})},
		{"/floe.v1.LogService/ProduceBatchesStream", &floev1.ProduceBatchesStreamRequest{Request: &floev1.ProduceBatchesRequest{Topic: "t"}}, need(c{op: auth.OpWrite, res: top("t")})},
		{"/floe.v1.LogService/Fetch", &floev1.FetchRequest{Topic: "t"}, need(c{op: auth.OpRead, res: top("t")})},
		{"/floe.v1.LogService/Subscribe", &floev1.SubscribeRequest{Topic: "t"}, need(c{op: auth.OpRead, res: top("t")})},
		{"/floe.v1.LogService/Subscribe", &floev1.SubscribeRequest{Topic: "t", Group: "g"}, need(c{op: auth.OpRead, res: top("t")}, c{op: auth.OpRead, res: grp("g")})},
		{"/floe.v1.LogService/ListOffsets", &floev1.ListOffsetsRequest{Topic: "t"}, need(c{op: auth.OpDescribe, res: top("t")})},
		{"/floe.v1.GroupService/Heartbeat", &floev1.GroupHeartbeatRequest{Group: "g", Subscription: []string{"a", "b"}},
			need(c{op: auth.OpRead, res: grp("g")}, c{op: auth.OpDescribe, res: top("a")}, c{op: auth.OpDescribe, res: top("b")})},
		{"/floe.v1.GroupService/CommitOffsets", &floev1.CommitOffsetsRequest{Group: "g", Offsets: []*floev1.OffsetCommit{{Topic: "a"}}},
			need(c{op: auth.OpRead, res: grp("g")}, c{op: auth.OpRead, res: top("a")})},
		{"/floe.v1.GroupService/FetchOffsets", &floev1.FetchOffsetsRequest{Group: "g"}, rpcAccess{checks: []rpcCheck{{op: auth.OpDescribe, res: grp("g")}}, filter: filterOffsets}},
		{"/floe.v1.GroupService/ListGroups", &floev1.ListGroupsRequest{}, rpcAccess{filter: filterGroups}},
		{"/floe.v1.GroupService/DescribeGroup", &floev1.DescribeGroupRequest{Group: "g"}, rpcAccess{checks: []rpcCheck{{op: auth.OpDescribe, res: grp("g")}}, filter: filterLag}},
		{"/floe.v1.GroupService/DeleteGroup", &floev1.DeleteGroupRequest{Group: "g"}, need(c{op: auth.OpDelete, res: grp("g")})},
		{"/floe.v1.GroupService/ResetOffsets", &floev1.ResetOffsetsRequest{Group: "g", Topics: []string{"a"}}, need(c{op: auth.OpRead, res: grp("g")}, c{op: auth.OpRead, res: top("a")})},
		{"/floe.v1.GroupService/ResetOffsets", &floev1.ResetOffsetsRequest{Group: "g"}, rpcAccess{checks: []rpcCheck{{op: auth.OpRead, res: grp("g")}}, readsGroupTopics: "g"}},
		{"/floe.v1.GroupService/CopyOffsets", &floev1.CopyOffsetsRequest{From: "a", To: "b"},
			rpcAccess{checks: []rpcCheck{{op: auth.OpDescribe, res: grp("a")}, {op: auth.OpRead, res: grp("b")}}, readsGroupTopics: "a"}},
		{"/floe.v1.AdminService/CreateACLs", nil, need(c{op: auth.OpAlter, res: auth.Cluster()})},
		{"/floe.v1.AdminService/ListACLs", nil, need(c{op: auth.OpDescribe, res: auth.Cluster()})},
		{"/floe.v1.Nope/Nothing", nil, rpcAccess{deny: true}},
		{"/floe.v1.LogService/Fetch", &floev1.ProduceRequest{}, rpcAccess{deny: true}},
	} {
		got := rpcAccessFor(tc.method, tc.req)
		if !equalAccess(got, tc.want) {
			t.Errorf("%s %v:\n got %+v\nwant %+v", tc.method, tc.req, got, tc.want)
		}
	}
}

func equalAccess(a, b rpcAccess) bool {
	if a.deny != b.deny || a.filter != b.filter || a.readsGroupTopics != b.readsGroupTopics || len(a.checks) != len(b.checks) {
		return false
	}
	for i := range a.checks {
		if a.checks[i] != b.checks[i] {
			return false
		}
	}
	return true
}
