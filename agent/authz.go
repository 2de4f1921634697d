package agent

import (
	"strings"

	"google.golang.org/protobuf/proto"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
)

// rpcCheck is one operation a call needs on one resource.
type rpcCheck struct {
	op  auth.Operation
	res auth.Resource
	// orCluster: the same operation on the cluster grants it too (Kafka's
	// CreateTopics: CREATE on the cluster or on the topic).
	orCluster bool
}

// respFilter says what of a call's answer the principal sees.
type respFilter int8

const (
	filterNone respFilter = iota
	// filterTopics: ListTopics shows the topics it may DESCRIBE.
	filterTopics
	// filterGroups: ListGroups shows the groups it may DESCRIBE (all of
	// them with DESCRIBE on the cluster).
	filterGroups
	// filterOffsets: FetchOffsets shows the topics it may DESCRIBE.
	filterOffsets
	// filterLag: DescribeGroup's partitions, the topics it may DESCRIBE.
	filterLag
)

// rpcAccess is what one call (or one message of a stream) needs: every
// check allowed, and READ on each topic group readsGroupTopics has
// committed offsets for (calls that name no topic touch all of them).
// deny refuses it outright (a method without a rule, a message of the
// wrong type): unknown is never allowed.
type rpcAccess struct {
	checks           []rpcCheck
	readsGroupTopics string
	filter           respFilter
	deny             bool
}

// adminService is auth21's AdminService (tokens, users, ACLs): ALTER on
// the cluster for everything, DESCRIBE on the cluster for its List calls.
const adminService = "/floe.v1.AdminService/"

// rpcRules maps every full method name of floe's services to the access
// its request needs. A stream's rule is applied to each message received.
var rpcRules = map[string]func(m proto.Message) rpcAccess{
	"/floe.v1.TopicService/CreateTopic": on(func(r *floev1.CreateTopicRequest) rpcAccess {
		return need(rpcCheck{op: auth.OpCreate, res: auth.Topic(r.GetName()), orCluster: true})
	}),
	"/floe.v1.TopicService/DeleteTopic": on(func(r *floev1.DeleteTopicRequest) rpcAccess {
		return need(topicOp(auth.OpDelete, r.GetName()))
	}),
	"/floe.v1.TopicService/ListTopics": on(func(*floev1.ListTopicsRequest) rpcAccess {
		return rpcAccess{filter: filterTopics}
	}),
	"/floe.v1.TopicService/DescribeTopic": on(func(r *floev1.DescribeTopicRequest) rpcAccess {
		return need(topicOp(auth.OpDescribe, r.GetName()))
	}),
	"/floe.v1.TopicService/AlterTopicConfig": on(func(r *floev1.AlterTopicConfigRequest) rpcAccess {
		return need(topicOp(auth.OpAlterConfigs, r.GetName()))
	}),
	// DescribePlacement: what Kafka's Metadata needs, DESCRIBE on the
	// topic (which WRITE implies: any producer may ask).
	"/floe.v1.TopicService/DescribePlacement": on(func(r *floev1.DescribePlacementRequest) rpcAccess {
		return need(topicOp(auth.OpDescribe, r.GetTopic()))
	}),
	"/floe.v1.TopicService/DeleteRecords": on(func(r *floev1.DeleteRecordsRequest) rpcAccess {
		return need(topicOp(auth.OpDelete, r.GetTopic()))
	}),

	"/floe.v1.LogService/Produce": on(func(r *floev1.ProduceRequest) rpcAccess {
		return need(topicOp(auth.OpWrite, r.GetTopic()))
	}),
	"/floe.v1.LogService/ProduceStream": on(func(r *floev1.ProduceStreamRequest) rpcAccess {
		return need(topicOp(auth.OpWrite, r.GetRequest().GetTopic()))
	}),
	"/floe.v1.LogService/ProduceBatches": on(func(r *floev1.ProduceBatchesRequest) rpcAccess {
		return need(topicOp(auth.OpWrite, r.GetTopic()))
	}),
	"/floe.v1.LogService/ProduceBatchesStream": on(func(r *floev1.ProduceBatchesStreamRequest) rpcAccess {
		return need(topicOp(auth.OpWrite, r.GetRequest().GetTopic()))
	}),
	// A producer id alone reaches no data (Kafka's idempotent
	// InitProducerId needs only an authenticated caller since 3.0's
	// implied IDEMPOTENT_WRITE); writes are checked at produce.
	"/floe.v1.LogService/InitProducer": on(func(*floev1.InitProducerRequest) rpcAccess { return rpcAccess{} }),
	"/floe.v1.LogService/Fetch": on(func(r *floev1.FetchRequest) rpcAccess {
		return need(topicOp(auth.OpRead, r.GetTopic()))
	}),
	"/floe.v1.LogService/Subscribe": on(func(r *floev1.SubscribeRequest) rpcAccess {
		a := need(topicOp(auth.OpRead, r.GetTopic()))
		if r.GetGroup() != "" {
			a.checks = append(a.checks, groupOp(auth.OpRead, r.GetGroup()))
		}
		return a
	}),
	"/floe.v1.LogService/ListOffsets": on(func(r *floev1.ListOffsetsRequest) rpcAccess {
		return need(topicOp(auth.OpDescribe, r.GetTopic()))
	}),

	"/floe.v1.GroupService/Heartbeat": on(func(r *floev1.GroupHeartbeatRequest) rpcAccess {
		a := need(groupOp(auth.OpRead, r.GetGroup()))
		for _, t := range r.GetSubscription() {
			a.checks = append(a.checks, topicOp(auth.OpDescribe, t))
		}
		return a
	}),
	"/floe.v1.GroupService/CommitOffsets": on(func(r *floev1.CommitOffsetsRequest) rpcAccess {
		a := need(groupOp(auth.OpRead, r.GetGroup()))
		for _, o := range r.GetOffsets() {
			a.checks = append(a.checks, topicOp(auth.OpRead, o.GetTopic()))
		}
		return a
	}),
	"/floe.v1.GroupService/FetchOffsets": on(func(r *floev1.FetchOffsetsRequest) rpcAccess {
		a := need(groupOp(auth.OpDescribe, r.GetGroup()))
		a.filter = filterOffsets
		return a
	}),
	"/floe.v1.GroupService/ListGroups": on(func(*floev1.ListGroupsRequest) rpcAccess {
		return rpcAccess{filter: filterGroups}
	}),
	"/floe.v1.GroupService/DescribeGroup": on(func(r *floev1.DescribeGroupRequest) rpcAccess {
		a := need(groupOp(auth.OpDescribe, r.GetGroup()))
		a.filter = filterLag
		return a
	}),
	"/floe.v1.GroupService/DeleteGroup": on(func(r *floev1.DeleteGroupRequest) rpcAccess {
		return need(groupOp(auth.OpDelete, r.GetGroup()))
	}),
	"/floe.v1.GroupService/ResetOffsets": on(func(r *floev1.ResetOffsetsRequest) rpcAccess {
		a := need(groupOp(auth.OpRead, r.GetGroup()))
		for _, tp := range r.GetPartitions() {
			a.checks = append(a.checks, topicOp(auth.OpRead, tp.GetTopic()))
		}
		for _, t := range r.GetTopics() {
			a.checks = append(a.checks, topicOp(auth.OpRead, t))
		}
		if len(r.GetPartitions()) == 0 && len(r.GetTopics()) == 0 {
			a.readsGroupTopics = r.GetGroup()
		}
		return a
	}),
	// Copying reads one group's positions and commits them to another:
	// DESCRIBE on the first, READ on the second and on every topic copied.
	"/floe.v1.GroupService/CopyOffsets": on(func(r *floev1.CopyOffsetsRequest) rpcAccess {
		a := need(groupOp(auth.OpDescribe, r.GetFrom()), groupOp(auth.OpRead, r.GetTo()))
		a.readsGroupTopics = r.GetFrom()
		return a
	}),
}

// rpcAccessFor is the one rule of gRPC authorization: what the call of
// method with message m needs. Methods of the AdminService need ALTER on
// the cluster (DESCRIBE for List calls); a method without a rule is
// refused.
func rpcAccessFor(method string, m proto.Message) rpcAccess {
	if f, ok := rpcRules[method]; ok {
		return f(m)
	}
	if name, ok := strings.CutPrefix(method, adminService); ok {
		if strings.HasPrefix(name, "List") {
			return need(rpcCheck{op: auth.OpDescribe, res: auth.Cluster()})
		}
		return need(rpcCheck{op: auth.OpAlter, res: auth.Cluster()})
	}
	return rpcAccess{deny: true}
}

// on adapts a typed rule; a message of another type is refused.
func on[R proto.Message](f func(R) rpcAccess) func(proto.Message) rpcAccess {
	return func(m proto.Message) rpcAccess {
		r, ok := m.(R)
		if !ok {
			return rpcAccess{deny: true}
		}
		return f(r)
	}
}

func need(cs ...rpcCheck) rpcAccess { return rpcAccess{checks: cs} }

func topicOp(op auth.Operation, name string) rpcCheck {
	return rpcCheck{op: op, res: auth.Topic(name)}
}

func groupOp(op auth.Operation, name string) rpcCheck {
	return rpcCheck{op: op, res: auth.Group(name)}
}
