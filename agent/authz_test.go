package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	grpcmd "google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/floe-broker/floe/access"
	"github.com/floe-broker/floe/access/accesstest"
	"github.com/floe-broker/floe/agent"
	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/batcher"
	"github.com/floe-broker/floe/kbatch"
	"github.com/floe-broker/floe/metadata"
	"github.com/floe-broker/floe/metadata/sqlite"
	"github.com/floe-broker/floe/objectstore"
)

// authNode is an agent whose gRPC server enforces authentication and
// ACLs; tokens "root" (a superuser), "alice" and "bob" verify as those
// users, "expired" and "revoked" fail as the real verifier would.
type authNode struct {
	conn  *grpc.ClientConn
	meta  metadata.Store
	acls  *accesstest.Store
	guard *access.Guard
}

func startAuthNode(t *testing.T) *authNode {
	t.Helper()
	return startAuthNodeWith(t, nil, insecure.NewCredentials())
}

// startAuthNodeWith serves with server credentials srv (nil: plaintext)
// and dials with cli.
func startAuthNodeWith(t *testing.T, srv credentials.TransportCredentials, cli credentials.TransportCredentials) *authNode {
	t.Helper()
	meta, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { meta.Close() }) // after the node's cleanup
	acfg, bcfg := agent.DefaultConfig(), batcher.DefaultConfig()
	bcfg.Linger = 5 * time.Millisecond
	acfg.PollInterval = 200 * time.Millisecond
	acls := accesstest.NewStore()
	v := accesstest.NewVerifier()
	for _, u := range []string{"root", "alice", "bob"} {
		v.Add(u, u)
	}
	v.Fail("expired", fmt.Errorf("%w: token expired at 2026-01-01T00:00:00Z", auth.ErrUnauthenticated))
	v.Fail("revoked", fmt.Errorf("%w: token revoked", auth.ErrUnauthenticated))
	cfg := access.DefaultConfig()
	cfg.Enabled, cfg.Superusers = true, []string{"User:root"}
	g, err := access.NewGuard(cfg, acls, access.GuardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sopts := agent.GRPCServerOptions(acfg, nil)
	if srv != nil {
		sopts = append(sopts, grpc.Creds(srv))
	}
	var n *node // the interceptors ask its agent for a group's topics
	sopts = append(sopts, agent.AuthServerOptions(g, v, func(ctx context.Context, group string) ([]string, error) { return n.ag.GroupTopics(ctx, group) })...)
	n = startNode(t, meta, objectstore.NewMemory(), acfg, bcfg, sopts...)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return n.lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(cli))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &authNode{conn: conn, meta: meta, acls: acls, guard: g}
}

// as is ctx carrying user's token ("" none).
func as(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return grpcmd.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// snapshot is the store's state: topics and their configs, partitions'
// offsets, groups and their members, committed offsets.
func (n *authNode) snapshot(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var sb strings.Builder
	topics, err := n.meta.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(topics, func(i, j int) bool { return topics[i].Name < topics[j].Name })
	for _, tp := range topics {
		fmt.Fprintf(&sb, "topic %s %d %v\n", tp.Name, tp.Partitions, tp.Config)
		ps, err := n.meta.PartitionStates(ctx, tp.ID)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sb, "  %+v\n", ps)
	}
	// The admin service's state: tokens, SCRAM users and ACLs.
	toks, err := n.meta.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range toks {
		fmt.Fprintf(&sb, "token %s %s revoked=%v\n", tk.ID, tk.Principal, tk.Revoked)
	}
	users, err := n.meta.ListScramCredentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		fmt.Fprintf(&sb, "user %s %s\n", u.User, u.Mechanism)
	}
	acls, err := n.meta.ListACLs(ctx, auth.ACLFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acls {
		fmt.Fprintf(&sb, "acl %s\n", a)
	}
	gs, err := n.meta.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(gs, func(i, j int) bool { return gs[i].Group < gs[j].Group })
	for _, g := range gs {
		offs, err := n.meta.FetchOffsets(ctx, g.Group, nil)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sb, "group %s %s %d\n", g.Group, g.State, g.Members)
		for _, o := range offs {
			fmt.Fprintf(&sb, "  %d/%d %d %q\n", o.TopicID, o.Partition, o.Offset, o.Metadata)
		}
	}
	return sb.String()
}

// rpcCase is one method called with a request that succeeds for a
// principal holding grants.
type rpcCase struct {
	method string
	grants []grant
	call   func(ctx context.Context, c *grpc.ClientConn) (items int, err error)
	// open: any authenticated principal may call it (InitProducer).
	open bool
	// filtered: a principal without the ACL gets an empty answer (items 0),
	// not an error.
	filtered bool
	// items is what the principal with the ACL sees of a filtered list.
	items int
}

type grant struct {
	op  auth.Operation
	res auth.Resource
}

func batchOf(t *testing.T) []byte {
	t.Helper()
	b, err := kbatch.Encode([]kbatch.Record{{Value: []byte("b"), Timestamp: time.Now().UnixMilli()}}, kbatch.DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rpcCases(t *testing.T) []rpcCase {
	tc := func(c *grpc.ClientConn) floev1.TopicServiceClient { return floev1.NewTopicServiceClient(c) }
	lc := func(c *grpc.ClientConn) floev1.LogServiceClient { return floev1.NewLogServiceClient(c) }
	gc := func(c *grpc.ClientConn) floev1.GroupServiceClient { return floev1.NewGroupServiceClient(c) }
	ac := func(c *grpc.ClientConn) floev1.AdminServiceClient { return floev1.NewAdminServiceClient(c) }
	adminACL := &floev1.Acl{Principal: "User:nobody", ResourceType: floev1.AclResourceType_ACL_RESOURCE_TYPE_TOPIC, PatternType: floev1.AclPatternType_ACL_PATTERN_TYPE_LITERAL, Name: "x", Operation: floev1.AclOperation_ACL_OPERATION_READ, Permission: floev1.AclPermission_ACL_PERMISSION_ALLOW}
	rec := []*floev1.Record{{Value: []byte("v")}}
	batch := batchOf(t)
	one := func(err error) (int, error) { return 1, err }
	top, grp := auth.Topic, auth.Group
	return []rpcCase{
		{method: "TopicService/CreateTopic", grants: []grant{{auth.OpCreate, top("new")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := tc(c).CreateTopic(ctx, &floev1.CreateTopicRequest{Name: "new", Partitions: 1})
			return one(err)
		}},
		{method: "TopicService/DeleteTopic", grants: []grant{{auth.OpDelete, top("del")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := tc(c).DeleteTopic(ctx, &floev1.DeleteTopicRequest{Name: "del"})
			return one(err)
		}},
		{method: "TopicService/ListTopics", filtered: true, items: 1, grants: []grant{{auth.OpDescribe, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			r, err := tc(c).ListTopics(ctx, &floev1.ListTopicsRequest{})
			return len(r.GetTopics()), err
		}},
		{method: "TopicService/DescribeTopic", grants: []grant{{auth.OpDescribe, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := tc(c).DescribeTopic(ctx, &floev1.DescribeTopicRequest{Name: "t"})
			return one(err)
		}},
		{method: "TopicService/DescribePlacement", grants: []grant{{auth.OpDescribe, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := tc(c).DescribePlacement(ctx, &floev1.DescribePlacementRequest{Topic: "t"})
			return one(err)
		}},
		{method: "TopicService/AlterTopicConfig", grants: []grant{{auth.OpAlterConfigs, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := tc(c).AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: "t", Set: map[string]string{"retention.ms": "86400000"}})
			return one(err)
		}},
		{method: "TopicService/DeleteRecords", grants: []grant{{auth.OpDelete, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := tc(c).DeleteRecords(ctx, &floev1.DeleteRecordsRequest{Topic: "t", Partition: 0, Offset: 1})
			return one(err)
		}},
		{method: "LogService/Produce", grants: []grant{{auth.OpWrite, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := lc(c).Produce(ctx, &floev1.ProduceRequest{Topic: "t", Records: rec})
			return one(err)
		}},
		{method: "LogService/ProduceStream", grants: []grant{{auth.OpWrite, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			s, err := lc(c).ProduceStream(ctx)
			if err != nil {
				return 0, err
			}
			_ = s.Send(&floev1.ProduceStreamRequest{RequestId: 1, Request: &floev1.ProduceRequest{Topic: "t", Records: rec}}) // a failed stream: Recv has its status
			r, err := s.Recv()
			if err != nil {
				return 0, err
			}
			_ = s.CloseSend()
			return one(streamErr(r.GetErrorCode(), r.GetErrorMessage()))
		}},
		{method: "LogService/ProduceBatches", grants: []grant{{auth.OpWrite, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := lc(c).ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: "t", Partitions: []*floev1.PartitionBatches{{Batches: batch}}})
			return one(err)
		}},
		{method: "LogService/ProduceBatchesStream", grants: []grant{{auth.OpWrite, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			s, err := lc(c).ProduceBatchesStream(ctx)
			if err != nil {
				return 0, err
			}
			_ = s.Send(&floev1.ProduceBatchesStreamRequest{RequestId: 1, Request: &floev1.ProduceBatchesRequest{Topic: "t", Partitions: []*floev1.PartitionBatches{{Batches: batch}}}})
			r, err := s.Recv()
			if err != nil {
				return 0, err
			}
			_ = s.CloseSend()
			return one(streamErr(r.GetErrorCode(), r.GetErrorMessage()))
		}},
		{method: "LogService/InitProducer", open: true, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := lc(c).InitProducer(ctx, &floev1.InitProducerRequest{})
			return one(err)
		}},
		{method: "LogService/Fetch", grants: []grant{{auth.OpRead, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			r, err := lc(c).Fetch(ctx, &floev1.FetchRequest{Topic: "t", Partition: 0, Offset: 1}) // DeleteRecords may have moved the start to 1
			if err == nil && len(r.GetRecords()) == 0 {
				err = errors.New("fetch returned no records")
			}
			return one(err)
		}},
		{method: "LogService/Subscribe", grants: []grant{{auth.OpRead, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			s, err := lc(c).Subscribe(ctx, &floev1.SubscribeRequest{Topic: "t", Partitions: []int32{0}, Start: &floev1.StartPosition{Position: &floev1.StartPosition_Earliest{Earliest: true}}})
			if err != nil {
				return 0, err
			}
			_, err = s.Recv()
			return one(err)
		}},
		{method: "LogService/ListOffsets", grants: []grant{{auth.OpDescribe, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := lc(c).ListOffsets(ctx, &floev1.ListOffsetsRequest{Topic: "t", Partitions: []int32{0}})
			return one(err)
		}},
		{method: "GroupService/Heartbeat", grants: []grant{{auth.OpRead, grp("hb")}, {auth.OpDescribe, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := gc(c).Heartbeat(ctx, &floev1.GroupHeartbeatRequest{Group: "hb", Subscription: []string{"t"}, SessionTimeoutMs: 60000})
			return one(err)
		}},
		{method: "GroupService/CommitOffsets", grants: []grant{{auth.OpRead, grp("g")}, {auth.OpRead, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := gc(c).CommitOffsets(ctx, &floev1.CommitOffsetsRequest{Group: "g", MemberEpoch: -1, Offsets: []*floev1.OffsetCommit{{Topic: "t", Partition: 0, Offset: 2}}})
			return one(err)
		}},
		{method: "GroupService/FetchOffsets", grants: []grant{{auth.OpDescribe, grp("g")}, {auth.OpDescribe, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			r, err := gc(c).FetchOffsets(ctx, &floev1.FetchOffsetsRequest{Group: "g"})
			if err == nil && len(r.GetOffsets()) == 0 {
				err = errors.New("no offsets")
			}
			return one(err)
		}},
		{method: "GroupService/ListGroups", filtered: true, items: 1, grants: []grant{{auth.OpDescribe, grp("g")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			r, err := gc(c).ListGroups(ctx, &floev1.ListGroupsRequest{})
			return len(r.GetGroups()), err
		}},
		{method: "GroupService/DescribeGroup", grants: []grant{{auth.OpDescribe, grp("g")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := gc(c).DescribeGroup(ctx, &floev1.DescribeGroupRequest{Group: "g"})
			return one(err)
		}},
		{method: "GroupService/DeleteGroup", grants: []grant{{auth.OpDelete, grp("gdel")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := gc(c).DeleteGroup(ctx, &floev1.DeleteGroupRequest{Group: "gdel"})
			return one(err)
		}},
		{method: "GroupService/ResetOffsets", grants: []grant{{auth.OpRead, grp("g")}, {auth.OpRead, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := gc(c).ResetOffsets(ctx, &floev1.ResetOffsetsRequest{Group: "g", Spec: floev1.ResetSpec_RESET_SPEC_EARLIEST, Force: true})
			return one(err)
		}},
		{method: "GroupService/CopyOffsets", grants: []grant{{auth.OpDescribe, grp("g")}, {auth.OpRead, grp("g2")}, {auth.OpRead, top("t")}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := gc(c).CopyOffsets(ctx, &floev1.CopyOffsetsRequest{From: "g", To: "g2"})
			return one(err)
		}},
		{method: "AdminService/CreateToken", grants: []grant{{auth.OpAlter, auth.Cluster()}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := ac(c).CreateToken(ctx, &floev1.CreateTokenRequest{Principal: "User:made", TtlMs: 3600000})
			return one(err)
		}},
		{method: "AdminService/ListTokens", grants: []grant{{auth.OpDescribe, auth.Cluster()}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := ac(c).ListTokens(ctx, &floev1.ListTokensRequest{})
			return one(err)
		}},
		{method: "AdminService/RevokeToken", grants: []grant{{auth.OpAlter, auth.Cluster()}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			r, err := ac(c).CreateToken(ctx, &floev1.CreateTokenRequest{Principal: "User:revoked", TtlMs: 3600000})
			if err != nil {
				return 0, err
			}
			_, err = ac(c).RevokeToken(ctx, &floev1.RevokeTokenRequest{Id: r.GetInfo().GetId()})
			return one(err)
		}},
		{method: "AdminService/UpsertUser", grants: []grant{{auth.OpAlter, auth.Cluster()}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := ac(c).UpsertUser(ctx, &floev1.UpsertUserRequest{Name: "carol", Mechanism: floev1.ScramMechanism_SCRAM_SHA_256, Password: "pw", Iterations: 4096})
			return one(err)
		}},
		{method: "AdminService/ListUsers", grants: []grant{{auth.OpDescribe, auth.Cluster()}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := ac(c).ListUsers(ctx, &floev1.ListUsersRequest{})
			return one(err)
		}},
		{method: "AdminService/DeleteUser", grants: []grant{{auth.OpAlter, auth.Cluster()}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			if _, err := ac(c).UpsertUser(ctx, &floev1.UpsertUserRequest{Name: "dave", Mechanism: floev1.ScramMechanism_SCRAM_SHA_256, Password: "pw", Iterations: 4096}); err != nil {
				return 0, err
			}
			_, err := ac(c).DeleteUser(ctx, &floev1.DeleteUserRequest{Name: "dave"})
			return one(err)
		}},
		{method: "AdminService/CreateAcls", grants: []grant{{auth.OpAlter, auth.Cluster()}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := ac(c).CreateAcls(ctx, &floev1.CreateAclsRequest{Acls: []*floev1.Acl{adminACL}})
			return one(err)
		}},
		{method: "AdminService/ListAcls", grants: []grant{{auth.OpDescribe, auth.Cluster()}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := ac(c).ListAcls(ctx, &floev1.ListAclsRequest{})
			return one(err)
		}},
		{method: "AdminService/DeleteAcls", grants: []grant{{auth.OpAlter, auth.Cluster()}}, call: func(ctx context.Context, c *grpc.ClientConn) (int, error) {
			_, err := ac(c).DeleteAcls(ctx, &floev1.DeleteAclsRequest{Filter: &floev1.AclFilter{Principal: "User:nobody"}})
			return one(err)
		}},
	}
}

func streamErr(code int32, msg string) error {
	if code == 0 {
		return nil
	}
	return status.Error(codes.Code(code), msg)
}

// TestGRPCAuthTable calls every method of floe's services as (a) no one,
// (b) a principal without the ACL, (c) one with it: (a) gets only
// Unauthenticated and (b) only PermissionDenied (or an empty list), and
// neither changes anything in the store; (c) succeeds.
func TestGRPCAuthTable(t *testing.T) {
	n := startAuthNode(t)
	ctx := context.Background()
	root := as(ctx, "root")
	tc, lc, gc := floev1.NewTopicServiceClient(n.conn), floev1.NewLogServiceClient(n.conn), floev1.NewGroupServiceClient(n.conn)
	for _, name := range []string{"t", "del"} {
		if _, err := tc.CreateTopic(root, &floev1.CreateTopicRequest{Name: name, Partitions: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, err := lc.Produce(root, &floev1.ProduceRequest{Topic: "t", Records: []*floev1.Record{{Value: []byte("v")}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []string{"g", "gdel"} {
		if _, err := gc.CommitOffsets(root, &floev1.CommitOffsetsRequest{Group: g, MemberEpoch: -1, Offsets: []*floev1.OffsetCommit{{Topic: "t", Offset: 1}}}); err != nil {
			t.Fatal(err)
		}
	}
	cases := rpcCases(t)
	covered := map[string]bool{}
	for _, c := range cases {
		covered["/floe.v1."+c.method] = true
	}
	forEachMethod(func(full string) {
		if !covered[full] {
			t.Errorf("%s is not in the table", full)
		}
	})
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.method, "/", "."), func(t *testing.T) {
			for _, who := range []struct{ token, want string }{{"", "Unauthenticated"}, {"expired", "Unauthenticated"}, {"revoked", "Unauthenticated"}, {"bob", "PermissionDenied"}} {
				before := n.snapshot(t)
				items, err := c.call(as(ctx, who.token), n.conn)
				switch {
				case who.want == "PermissionDenied" && c.open:
					if err != nil {
						t.Errorf("bob: %v, want allowed (any principal)", err)
					}
					continue
				case who.want == "PermissionDenied" && c.filtered:
					if err != nil || items != 0 {
						t.Errorf("bob: %d items, %v; want none", items, err)
					}
				case status.Code(err).String() != who.want:
					t.Errorf("%q: got %v, want %s", who.token, err, who.want)
				}
				if after := n.snapshot(t); after != before {
					t.Errorf("%q changed the store:\nbefore %s\nafter %s", who.token, before, after)
				}
			}
			for _, g := range c.grants {
				n.acls.Allow("User:alice", g.op, g.res)
			}
			items, err := c.call(as(ctx, "alice"), n.conn)
			if err != nil || items == 0 || c.filtered && items != c.items {
				t.Errorf("alice with %v: %d items, %v", c.grants, items, err)
			}
			if _, err := n.acls.DeleteACLs(ctx, auth.ACLFilter{Principal: "User:alice"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func forEachMethod(fn func(full string)) {
	sds := floev1.File_floe_v1_floe_proto.Services()
	for i := range sds.Len() {
		sd := sds.Get(i)
		ms := sd.Methods()
		for j := range ms.Len() {
			fn("/" + string(sd.FullName()) + "/" + string(ms.Get(j).Name()))
		}
	}
	var _ protoreflect.ServiceDescriptor
}

// TestGRPCAuthEveryStreamMessage: each message of a produce stream is
// checked, not only the first; a refused one is answered PermissionDenied
// and the stream goes on.
func TestGRPCAuthEveryStreamMessage(t *testing.T) {
	n := startAuthNode(t)
	ctx := context.Background()
	tc := floev1.NewTopicServiceClient(n.conn)
	for _, name := range []string{"mine", "theirs"} {
		if _, err := tc.CreateTopic(as(ctx, "root"), &floev1.CreateTopicRequest{Name: name, Partitions: 1}); err != nil {
			t.Fatal(err)
		}
	}
	n.acls.Allow("User:alice", auth.OpWrite, auth.Topic("mine"))
	s, err := floev1.NewLogServiceClient(n.conn).ProduceStream(as(ctx, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	rec := []*floev1.Record{{Value: []byte("v")}}
	for i, topic := range []string{"mine", "theirs", "mine"} {
		if err := s.Send(&floev1.ProduceStreamRequest{RequestId: uint64(i + 1), Request: &floev1.ProduceRequest{Topic: topic, Records: rec}}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[uint64]codes.Code{}
	for range 3 {
		r, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		got[r.GetRequestId()] = codes.Code(r.GetErrorCode())
	}
	_ = s.CloseSend()
	if got[1] != codes.OK || got[2] != codes.PermissionDenied || got[3] != codes.OK {
		t.Fatalf("answers %v: want 1 and 3 OK, 2 PermissionDenied", got)
	}
	d, err := n.meta.DescribeTopic(ctx, "theirs")
	if err != nil || d.PartitionStates[0].HighWatermark != 0 {
		t.Fatalf("theirs: %+v, %v; want nothing written", d, err)
	}
}

// TestGRPCAuthGroupWide: a reset or copy naming no topic touches every
// topic the group has offsets for, so it needs READ on each of them; and
// the answers of FetchOffsets and DescribeGroup show only describable
// topics. CREATE on the cluster grants CreateTopic.
func TestGRPCAuthGroupWide(t *testing.T) {
	n := startAuthNode(t)
	ctx := context.Background()
	root := as(ctx, "root")
	tc, gc := floev1.NewTopicServiceClient(n.conn), floev1.NewGroupServiceClient(n.conn)
	for _, name := range []string{"open", "secret"} {
		if _, err := tc.CreateTopic(root, &floev1.CreateTopicRequest{Name: name, Partitions: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := gc.CommitOffsets(root, &floev1.CommitOffsetsRequest{Group: "g", MemberEpoch: -1, Offsets: []*floev1.OffsetCommit{
		{Topic: "open", Offset: 0}, {Topic: "secret", Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	n.acls.Allow("User:alice", auth.OpRead, auth.Group("g"))
	n.acls.Allow("User:alice", auth.OpRead, auth.Group("g2"))
	n.acls.Allow("User:alice", auth.OpRead, auth.Topic("open"))
	alice := as(ctx, "alice")
	before := n.snapshot(t)
	_, err := gc.ResetOffsets(alice, &floev1.ResetOffsetsRequest{Group: "g", Spec: floev1.ResetSpec_RESET_SPEC_LATEST, Force: true})
	if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("reset of every topic without READ on secret: %v", err)
	}
	if _, err := gc.CopyOffsets(alice, &floev1.CopyOffsetsRequest{From: "g", To: "g2"}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("copy without READ on secret: %v", err)
	}
	if after := n.snapshot(t); after != before {
		t.Fatalf("refused calls changed the store:\n%s\n%s", before, after)
	}
	if _, err := gc.ResetOffsets(alice, &floev1.ResetOffsetsRequest{Group: "g", Topics: []string{"open"}, Spec: floev1.ResetSpec_RESET_SPEC_LATEST, Force: true}); err != nil {
		t.Fatalf("reset of open: %v", err)
	}
	offs, err := gc.FetchOffsets(alice, &floev1.FetchOffsetsRequest{Group: "g"})
	if err != nil || len(offs.GetOffsets()) != 1 || offs.GetOffsets()[0].GetTopic() != "open" {
		t.Fatalf("FetchOffsets: %v, %v; want open only", offs, err)
	}
	d, err := gc.DescribeGroup(alice, &floev1.DescribeGroupRequest{Group: "g"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range d.GetPartitions() {
		if p.GetTopic() == "secret" {
			t.Fatalf("DescribeGroup shows secret's lag")
		}
	}
	if _, err := tc.CreateTopic(alice, &floev1.CreateTopicRequest{Name: "x", Partitions: 1}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("create without CREATE: %v", err)
	}
	n.acls.Allow("User:alice", auth.OpCreate, auth.Cluster())
	if _, err := tc.CreateTopic(alice, &floev1.CreateTopicRequest{Name: "x", Partitions: 1}); err != nil {
		t.Fatalf("create with CREATE on the cluster: %v", err)
	}
}
