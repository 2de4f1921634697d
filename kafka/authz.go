package kafka

import (
	"context"
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
)

// Authorization of every served API, decided at the dispatch point
// (dispatchAuthorized) by one rule per key (kafkaRules), as Apache Kafka's
// KafkaApis does:
//
//   - Produce WRITE, Fetch READ, ListOffsets and OffsetForLeaderEpoch
//     DESCRIBE, DeleteRecords DELETE, CreatePartitions ALTER on each topic:
//     a denied topic's partitions answer TOPIC_AUTHORIZATION_FAILED, the
//     others are served.
//   - CreateTopics CREATE on the cluster or the topic; DeleteTopics DELETE.
//   - Metadata lists only the topics the principal may DESCRIBE; a named
//     one it may not is TOPIC_AUTHORIZATION_FAILED, without partitions.
//   - JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat
//     READ on the group (GROUP_AUTHORIZATION_FAILED); the KIP-848
//     heartbeat also DESCRIBE on each subscribed topic name.
//   - OffsetCommit READ on the group and each topic; OffsetFetch DESCRIBE
//     on the group, and each topic (all topics: filtered to those); at v10
//     the topics named by id are checked as the topics the ids name
//     (resolveTopicIDs), an id that names none is the handler's
//     UNKNOWN_TOPIC_ID;
//     OffsetDelete DELETE on the group, READ on each topic.
//   - FindCoordinator, DescribeGroups, ConsumerGroupDescribe DESCRIBE on
//     the group; DescribeProducers READ on each topic; DeleteGroups
//     DELETE; ListGroups lists all with DESCRIBE on the cluster, else the
//     groups it may DESCRIBE.
//   - DescribeConfigs DESCRIBE_CONFIGS, AlterConfigs and
//     IncrementalAlterConfigs ALTER_CONFIGS on the topic (a broker
//     resource: on the cluster, CLUSTER_AUTHORIZATION_FAILED).
//   - CreateAcls, DeleteAcls, AlterUserScramCredentials ALTER on the
//     cluster; DescribeAcls, DescribeUserScramCredentials DESCRIBE.
//   - ApiVersions, SaslHandshake, SaslAuthenticate: anyone; DescribeCluster
//     and InitProducerId (no transactional id: those are refused anyway)
//     any authenticated principal.
//
// A KIP-848 regex subscription is resolved to the topics the principal may
// DESCRIBE (regex_subscriptions.go); deviation: an ACL change alone takes
// effect at the next topic-set change or join (the fetches are checked
// every time).

// checker answers checks for one connection's principal: allowed records
// a denial, permits (for filtering lists) does not.
type checker interface {
	allowed(op auth.Operation, res auth.Resource) bool
	permits(op auth.Operation, res auth.Resource) bool
}

// kafkaAuthz is a request's authorization: the request the handler gets
// (denied parts removed), or deny, the whole answer (the handler is not
// called); finish, if set, completes the handler's answer (the denied
// parts' errors, lists filtered).
type kafkaAuthz struct {
	req    kmsg.Request
	deny   kmsg.Response
	finish func(kmsg.Response)
}

type kafkaRule func(req kmsg.Request, ck checker) kafkaAuthz

// authorizeKafka is the one rule of Kafka authorization: what of req the
// principal behind ck may do. A key without a rule is refused.
func authorizeKafka(req kmsg.Request, ck checker) kafkaAuthz {
	rule, ok := kafkaRules[req.Key()]
	if !ok {
		resp := req.ResponseKind()
		setErrorCode(resp, kerr.ClusterAuthorizationFailed.Code)
		return kafkaAuthz{deny: resp}
	}
	return rule(req, ck)
}

var (
	topicDenied   = kerr.TopicAuthorizationFailed.Code
	groupDenied   = kerr.GroupAuthorizationFailed.Code
	clusterDenied = kerr.ClusterAuthorizationFailed.Code
)

var kafkaRules map[int16]kafkaRule

func init() {
	kafkaRules = map[int16]kafkaRule{
		kmsg.ApiVersions.Int16():      pass,
		kmsg.SASLHandshake.Int16():    pass,
		kmsg.SASLAuthenticate.Int16(): pass,
		kmsg.DescribeCluster.Int16():  pass,
		kmsg.InitProducerID.Int16():   pass,

		kmsg.Produce.Int16():              topicsRule("Topics", "Topic", auth.OpWrite, false),
		kmsg.Fetch.Int16():                pass, // READ on each topic, by the handler (01_fetch.go): a session holds partitions the request does not name
		kmsg.ListOffsets.Int16():          topicsRule("Topics", "Topic", auth.OpDescribe, false),
		kmsg.OffsetForLeaderEpoch.Int16(): topicsRule("Topics", "Topic", auth.OpDescribe, false),
		kmsg.DeleteRecords.Int16():        topicsRule("Topics", "Topic", auth.OpDelete, false),
		kmsg.CreatePartitions.Int16():     topicsRule("Topics", "Topic", auth.OpAlter, false),
		kmsg.CreateTopics.Int16():         topicsRule("Topics", "Topic", auth.OpCreate, true),
		kmsg.DeleteTopics.Int16():         deleteTopicsRule,
		kmsg.Metadata.Int16():             metadataRule,

		kmsg.JoinGroup.Int16():              groupRule(auth.OpRead),
		kmsg.SyncGroup.Int16():              groupRule(auth.OpRead),
		kmsg.Heartbeat.Int16():              groupRule(auth.OpRead),
		kmsg.LeaveGroup.Int16():             groupRule(auth.OpRead),
		kmsg.ConsumerGroupHeartbeat.Int16(): consumerHeartbeatRule,
		kmsg.OffsetCommit.Int16():           offsetCommitRule,
		kmsg.OffsetFetch.Int16():            offsetFetchRule,
		kmsg.OffsetDelete.Int16():           offsetDeleteRule,
		kmsg.FindCoordinator.Int16():        findCoordinatorRule,
		kmsg.DescribeGroups.Int16():         groupsRule(auth.OpDescribe),
		kmsg.ConsumerGroupDescribe.Int16():  groupsRule(auth.OpDescribe),
		kmsg.DescribeProducers.Int16():      topicsRule("Topics", "Topic", auth.OpRead, false),
		kmsg.DeleteGroups.Int16():           groupsRule(auth.OpDelete),
		kmsg.ListGroups.Int16():             listGroupsRule,

		kmsg.DescribeConfigs.Int16():         configsRule(auth.OpDescribeConfigs),
		kmsg.AlterConfigs.Int16():            configsRule(auth.OpAlterConfigs),
		kmsg.IncrementalAlterConfigs.Int16(): configsRule(auth.OpAlterConfigs),

		kmsg.CreateACLs.Int16():                   clusterRule(auth.OpAlter),
		kmsg.DeleteACLs.Int16():                   clusterRule(auth.OpAlter),
		kmsg.DescribeACLs.Int16():                 clusterRule(auth.OpDescribe),
		kmsg.DescribeUserSCRAMCredentials.Int16(): clusterRule(auth.OpDescribe),
		kmsg.AlterUserSCRAMCredentials.Int16():    clusterRule(auth.OpAlter),
	}
}

func pass(req kmsg.Request, _ checker) kafkaAuthz { return kafkaAuthz{req: req} }

// topicsRule checks op on each topic of the request's list (orCluster: op on
// the cluster grants every one).
func topicsRule(list, name string, op auth.Operation, orCluster bool) kafkaRule {
	return func(req kmsg.Request, ck checker) kafkaAuthz {
		if orCluster && ck.permits(op, auth.Cluster()) {
			return kafkaAuthz{req: req}
		}
		ds := splitList(req, list, name, func(t string) bool { return !ck.allowed(op, auth.Topic(t)) })
		return withDenied(req, list, name, ds, topicDenied)
	}
}

// withDenied serves req and adds ds to its answer with code.
func withDenied(req kmsg.Request, list, name string, ds []deniedItem, code int16) kafkaAuthz {
	if len(ds) == 0 {
		return kafkaAuthz{req: req}
	}
	return kafkaAuthz{req: req, finish: func(resp kmsg.Response) { appendDenied(resp, list, name, ds, code) }}
}

// refuse is the answer of req with code as its top-level error code.
func refuse(req kmsg.Request, code int16) kafkaAuthz {
	resp := req.ResponseKind()
	setErrorCode(resp, code)
	return kafkaAuthz{deny: resp}
}

// groupRule checks op on the request's Group.
func groupRule(op auth.Operation) kafkaRule {
	return func(req kmsg.Request, ck checker) kafkaAuthz {
		if !ck.allowed(op, auth.Group(stringField(req, "Group"))) {
			return refuse(req, groupDenied)
		}
		return kafkaAuthz{req: req}
	}
}

// groupsRule checks op on each of the request's Groups.
func groupsRule(op auth.Operation) kafkaRule {
	return func(req kmsg.Request, ck checker) kafkaAuthz {
		ds := splitStrings(req, "Groups", func(g string) bool { return !ck.allowed(op, auth.Group(g)) })
		return withDenied(req, "Groups", "Group", ds, groupDenied)
	}
}

// clusterRule checks op on the cluster, for the whole request.
func clusterRule(op auth.Operation) kafkaRule {
	return func(req kmsg.Request, ck checker) kafkaAuthz {
		if ck.allowed(op, auth.Cluster()) {
			return kafkaAuthz{req: req}
		}
		return kafkaAuthz{deny: clusterRefusal(req)}
	}
}

// clusterRefusal answers a cluster-wide API with CLUSTER_AUTHORIZATION_FAILED
// in each result the request asked for.
func clusterRefusal(req kmsg.Request) kmsg.Response {
	resp := req.ResponseKind()
	setErrorCode(resp, clusterDenied)
	switch r := req.(type) {
	case *kmsg.CreateACLsRequest:
		out := resp.(*kmsg.CreateACLsResponse)
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = clusterDenied
			out.Results = append(out.Results, res)
		}
	case *kmsg.DeleteACLsRequest:
		out := resp.(*kmsg.DeleteACLsResponse)
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = clusterDenied
			out.Results = append(out.Results, res)
		}
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		out := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		add := func(user string) {
			if !seen[user] {
				seen[user] = true
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode = user, clusterDenied
				out.Results = append(out.Results, res)
			}
		}
		for _, d := range r.Deletions {
			add(d.Name)
		}
		for _, u := range r.Upsertions {
			add(u.Name)
		}
	}
	return resp
}

func deleteTopicsRule(req kmsg.Request, ck checker) kafkaAuthz {
	r := req.(*kmsg.DeleteTopicsRequest)
	deny := func(t string) bool { return !ck.allowed(auth.OpDelete, auth.Topic(t)) }
	var denied []kmsg.DeleteTopicsRequestTopic
	kept := r.TopicNames[:0]
	for _, t := range r.TopicNames {
		if deny(t) {
			denied = append(denied, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(t)})
		} else {
			kept = append(kept, t)
		}
	}
	r.TopicNames = kept
	keptT := r.Topics[:0]
	for _, t := range r.Topics {
		// By id (v6): named by resolveTopicIDs before this rule; an id
		// that names no topic is refused as unauthorized, as Kafka does
		// for ids it will not reveal.
		if t.Topic == nil || deny(*t.Topic) {
			denied = append(denied, t)
		} else {
			keptT = append(keptT, t)
		}
	}
	r.Topics = keptT
	if len(denied) == 0 {
		return kafkaAuthz{req: req}
	}
	return kafkaAuthz{req: req, finish: func(resp kmsg.Response) {
		out := resp.(*kmsg.DeleteTopicsResponse)
		for _, t := range denied {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode = t.Topic, t.TopicID, topicDenied
			out.Topics = append(out.Topics, st)
		}
	}}
}

// resolveTopicIDs names the topics a DeleteTopics, OffsetCommit v10 or
// OffsetFetch v10 request gives by id only, so that their rules check
// them by name. An id that names no topic is left without a name.
func (c *conn) resolveTopicIDs(req kmsg.Request) {
	name := func(id [16]byte) (string, bool) {
		if topicIDOf(id) <= 0 {
			return "", false
		}
		tp, err := c.s.be.KafkaTopicByID(c.ctx, topicIDOf(id))
		return tp.Name, err == nil
	}
	switch r := req.(type) {
	case *kmsg.DeleteTopicsRequest:
		for i, t := range r.Topics {
			if n, ok := name(t.TopicID); t.Topic == nil && ok {
				r.Topics[i].Topic = kmsg.StringPtr(n)
			}
		}
	case *kmsg.OffsetCommitRequest:
		for i := range r.Topics {
			if r.Version >= 10 {
				r.Topics[i].Topic, _ = name(r.Topics[i].TopicID)
			}
		}
	case *kmsg.OffsetFetchRequest:
		for _, g := range r.Groups {
			for i := range g.Topics {
				if r.Version >= 10 {
					g.Topics[i].Topic, _ = name(g.Topics[i].TopicID)
				}
			}
		}
	}
}

// unknownTopicID reports a topic of a request that names topics by id
// (v10 of OffsetCommit and OffsetFetch) whose id names no topic
// (resolveTopicIDs left it without a name): no topic to check, the
// handler answers UNKNOWN_TOPIC_ID, as Kafka does.
func unknownTopicID(version int16, name string) bool { return version >= 10 && name == "" }

// metadataRule filters the answer: topics the principal may not DESCRIBE
// are left out of a listing of all, and answer TOPIC_AUTHORIZATION_FAILED
// when named.
func metadataRule(req kmsg.Request, ck checker) kafkaAuthz {
	named := req.(*kmsg.MetadataRequest).Topics != nil
	return kafkaAuthz{req: req, finish: func(resp kmsg.Response) {
		out := resp.(*kmsg.MetadataResponse)
		kept := out.Topics[:0]
		for _, t := range out.Topics {
			if t.Topic == nil || ck.permits(auth.OpDescribe, auth.Topic(*t.Topic)) {
				kept = append(kept, t)
				continue
			}
			if named {
				ck.allowed(auth.OpDescribe, auth.Topic(*t.Topic)) // recorded: it was asked for
				mt := kmsg.NewMetadataResponseTopic()
				mt.Topic, mt.ErrorCode = t.Topic, topicDenied
				kept = append(kept, mt)
			}
		}
		out.Topics = kept
	}}
}

func listGroupsRule(req kmsg.Request, ck checker) kafkaAuthz {
	if ck.permits(auth.OpDescribe, auth.Cluster()) {
		return kafkaAuthz{req: req}
	}
	return kafkaAuthz{req: req, finish: func(resp kmsg.Response) {
		out := resp.(*kmsg.ListGroupsResponse)
		kept := out.Groups[:0]
		for _, g := range out.Groups {
			if ck.permits(auth.OpDescribe, auth.Group(g.Group)) {
				kept = append(kept, g)
			}
		}
		out.Groups = kept
	}}
}

func consumerHeartbeatRule(req kmsg.Request, ck checker) kafkaAuthz {
	r := req.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !ck.allowed(auth.OpRead, auth.Group(r.Group)) {
		return refuse(req, groupDenied)
	}
	for _, t := range r.SubscribedTopicNames {
		if !ck.allowed(auth.OpDescribe, auth.Topic(t)) {
			return refuse(req, topicDenied)
		}
	}
	return kafkaAuthz{req: req}
}

func offsetCommitRule(req kmsg.Request, ck checker) kafkaAuthz {
	r := req.(*kmsg.OffsetCommitRequest)
	if !ck.allowed(auth.OpRead, auth.Group(r.Group)) {
		resp := req.ResponseKind()
		appendDenied(resp, "Topics", "Topic", splitList(req, "Topics", "Topic", func(string) bool { return true }), groupDenied)
		return kafkaAuthz{deny: resp}
	}
	ds := splitList(req, "Topics", "Topic", func(t string) bool {
		return !unknownTopicID(r.Version, t) && !ck.allowed(auth.OpRead, auth.Topic(t))
	})
	return withDenied(req, "Topics", "Topic", ds, topicDenied)
}

func offsetDeleteRule(req kmsg.Request, ck checker) kafkaAuthz {
	r := req.(*kmsg.OffsetDeleteRequest)
	if !ck.allowed(auth.OpDelete, auth.Group(r.Group)) {
		return refuse(req, groupDenied)
	}
	return topicsRule("Topics", "Topic", auth.OpRead, false)(req, ck)
}

func findCoordinatorRule(req kmsg.Request, ck checker) kafkaAuthz {
	r := req.(*kmsg.FindCoordinatorRequest)
	if r.CoordinatorType != 0 {
		return kafkaAuthz{req: req} // transactions: the handler refuses them
	}
	if r.Version < 4 {
		if !ck.allowed(auth.OpDescribe, auth.Group(r.CoordinatorKey)) {
			return refuse(req, groupDenied)
		}
		return kafkaAuthz{req: req}
	}
	ds := splitStrings(req, "CoordinatorKeys", func(g string) bool { return !ck.allowed(auth.OpDescribe, auth.Group(g)) })
	return withDenied(req, "Coordinators", "Key", ds, groupDenied)
}

// offsetFetchRule: DESCRIBE on the group, then the answer's topics
// filtered (all topics) or refused (named) to those it may DESCRIBE.
func offsetFetchRule(req kmsg.Request, ck checker) kafkaAuthz {
	r := req.(*kmsg.OffsetFetchRequest)
	if r.Version < 8 {
		if !ck.allowed(auth.OpDescribe, auth.Group(r.Group)) {
			resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = groupDenied
			for _, t := range r.Topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.ErrorCode = p, -1, groupDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return kafkaAuthz{deny: resp}
		}
		named := r.Topics != nil
		return kafkaAuthz{req: req, finish: func(resp kmsg.Response) {
			out := resp.(*kmsg.OffsetFetchResponse)
			kept := out.Topics[:0]
			for _, t := range out.Topics {
				switch {
				case ck.permits(auth.OpDescribe, auth.Topic(t.Topic)):
				case named:
					ck.allowed(auth.OpDescribe, auth.Topic(t.Topic))
					for i := range t.Partitions {
						t.Partitions[i].Offset, t.Partitions[i].Metadata, t.Partitions[i].ErrorCode = -1, nil, topicDenied
					}
				default:
					continue
				}
				kept = append(kept, t)
			}
			out.Topics = kept
		}}
	}
	named := map[string]bool{}
	var denied []string
	kept := r.Groups[:0]
	for _, g := range r.Groups {
		if !ck.allowed(auth.OpDescribe, auth.Group(g.Group)) {
			denied = append(denied, g.Group)
			continue
		}
		named[g.Group] = g.Topics != nil
		kept = append(kept, g)
	}
	r.Groups = kept
	return kafkaAuthz{req: req, finish: func(resp kmsg.Response) {
		out := resp.(*kmsg.OffsetFetchResponse)
		for gi := range out.Groups {
			g := &out.Groups[gi]
			keptT := g.Topics[:0]
			for _, t := range g.Topics {
				switch {
				case unknownTopicID(r.Version, t.Topic):
				case ck.permits(auth.OpDescribe, auth.Topic(t.Topic)):
				case named[g.Group]:
					ck.allowed(auth.OpDescribe, auth.Topic(t.Topic))
					for i := range t.Partitions {
						t.Partitions[i].Offset, t.Partitions[i].Metadata, t.Partitions[i].ErrorCode = -1, nil, topicDenied
					}
				default:
					continue
				}
				keptT = append(keptT, t)
			}
			g.Topics = keptT
		}
		for _, name := range denied {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = name, groupDenied
			out.Groups = append(out.Groups, rg)
		}
	}}
}

// configsRule checks op on each resource: a topic's, or the cluster for a
// broker's.
func configsRule(op auth.Operation) kafkaRule {
	return func(req kmsg.Request, ck checker) kafkaAuthz {
		type denied struct {
			typ  kmsg.ConfigResourceType
			name string
			code int16
		}
		var ds []denied
		rv := reflect.ValueOf(req).Elem().FieldByName("Resources")
		kept := reflect.MakeSlice(rv.Type(), 0, rv.Len())
		for i := range rv.Len() {
			e := rv.Index(i)
			typ := kmsg.ConfigResourceType(e.FieldByName("ResourceType").Int())
			name := e.FieldByName("ResourceName").String()
			res, code := auth.Topic(name), topicDenied
			if typ != kmsg.ConfigResourceTypeTopic {
				res, code = auth.Cluster(), clusterDenied
			}
			if ck.allowed(op, res) {
				kept = reflect.Append(kept, e)
			} else {
				ds = append(ds, denied{typ, name, code})
			}
		}
		rv.Set(kept)
		if len(ds) == 0 {
			return kafkaAuthz{req: req}
		}
		return kafkaAuthz{req: req, finish: func(resp kmsg.Response) {
			out := reflect.ValueOf(resp).Elem().FieldByName("Resources")
			for _, d := range ds {
				e := newElem(out.Type().Elem())
				e.FieldByName("ResourceType").SetInt(int64(d.typ))
				e.FieldByName("ResourceName").SetString(d.name)
				e.FieldByName("ErrorCode").SetInt(int64(d.code))
				out.Set(reflect.Append(out, e))
			}
		}}
	}
}

// deniedItem is a refused element of a request's list: its name and the
// partitions it named.
type deniedItem struct {
	name  string
	id    [16]byte // the element's TopicID, where it has one
	parts []int32
}

// splitList removes from the slice field list of req the elements whose
// string field name deny holds for, and returns them.
func splitList(req kmsg.Request, list, name string, deny func(string) bool) []deniedItem {
	rv := reflect.ValueOf(req).Elem().FieldByName(list)
	kept := reflect.MakeSlice(rv.Type(), 0, rv.Len())
	var out []deniedItem
	for i := range rv.Len() {
		e := rv.Index(i)
		n := e.FieldByName(name).String()
		if !deny(n) {
			kept = reflect.Append(kept, e)
			continue
		}
		d := deniedItem{name: n}
		if id := e.FieldByName("TopicID"); id.IsValid() && id.Type() == reflect.TypeOf(d.id) {
			d.id = id.Interface().([16]byte)
		}
		if ps := e.FieldByName("Partitions"); ps.IsValid() && ps.Kind() == reflect.Slice {
			for j := range ps.Len() {
				p := ps.Index(j)
				if p.Kind() == reflect.Int32 {
					d.parts = append(d.parts, int32(p.Int()))
				} else {
					d.parts = append(d.parts, int32(p.FieldByName("Partition").Int()))
				}
			}
		}
		out = append(out, d)
	}
	if rv.Len() > 0 {
		rv.Set(kept)
	}
	return out
}

// splitStrings removes from the []string field list of req the names
// deny holds for, and returns them.
func splitStrings(req kmsg.Request, list string, deny func(string) bool) []deniedItem {
	rv := reflect.ValueOf(req).Elem().FieldByName(list)
	names := rv.Interface().([]string)
	if len(names) == 0 {
		return nil
	}
	var kept []string
	var out []deniedItem
	for _, n := range names {
		if deny(n) {
			out = append(out, deniedItem{name: n})
		} else {
			kept = append(kept, n)
		}
	}
	if kept == nil {
		kept = []string{}
	}
	rv.Set(reflect.ValueOf(kept))
	return out
}

// appendDenied adds one element per ds to the slice field list of resp:
// its name field set, and code in its ErrorCode, or, for elements without
// one, in each of its partitions'.
func appendDenied(resp kmsg.Response, list, name string, ds []deniedItem, code int16) {
	if resp == nil {
		return // acks 0
	}
	rv := reflect.ValueOf(resp).Elem().FieldByName(list)
	for _, d := range ds {
		e := newElem(rv.Type().Elem())
		e.FieldByName(name).SetString(d.name)
		if id := e.FieldByName("TopicID"); id.IsValid() && id.Type() == reflect.TypeOf(d.id) {
			id.Set(reflect.ValueOf(d.id))
		}
		if ec := e.FieldByName("ErrorCode"); ec.IsValid() {
			ec.SetInt(int64(code))
		} else if ps := e.FieldByName("Partitions"); ps.IsValid() {
			for _, p := range d.parts {
				pe := newElem(ps.Type().Elem())
				pe.FieldByName("Partition").SetInt(int64(p))
				pe.FieldByName("ErrorCode").SetInt(int64(code))
				ps = reflect.Append(ps, pe)
			}
			e.FieldByName("Partitions").Set(ps)
		}
		rv.Set(reflect.Append(rv, e))
	}
}

// newElem is a new kmsg struct of type t with its defaults.
func newElem(t reflect.Type) reflect.Value {
	p := reflect.New(t)
	if d, ok := p.Interface().(interface{ Default() }); ok {
		d.Default()
	}
	return p.Elem()
}

func stringField(req kmsg.Request, name string) string {
	return reflect.ValueOf(req).Elem().FieldByName(name).String()
}

// connChecker checks for a connection's principal through the server's
// Guard.
type connChecker struct {
	s *Server
	p auth.Principal
}

func (c connChecker) allowed(op auth.Operation, res auth.Resource) bool {
	return c.s.guard().Allowed("kafka", c.p, op, res)
}

func (c connChecker) permits(op auth.Operation, res auth.Resource) bool {
	return c.s.guard().Permits(c.p, op, res)
}

// dispatchAuthorized is dispatch behind authentication and ACLs: with auth
// on, a request other than ApiVersions and SASL before authentication (by
// SASL, or a verified TLS client certificate) is
// answered SASL_AUTHENTICATION_FAILED and the connection closes after it;
// then authorizeKafka decides what of the request is served.
func (c *conn) dispatchAuthorized(r request) (func(context.Context) kmsg.Response, error) {
	g := c.s.guard()
	if !g.Enabled() {
		return c.dispatch(r)
	}
	p, ok := c.authenticated()
	if !ok && !preAuthKey(r.key) {
		c.s.log.Info("kafka: request before authentication; closing", "client", c.client(), "api", kmsg.NameForKey(r.key))
		c.closeAfterAnswer()
		resp := authFailed(r.key, r.version) // nil: closed without an answer
		return func(context.Context) kmsg.Response { return resp }, nil
	}
	c.resolveTopicIDs(r.req)
	az := authorizeKafka(r.req, connChecker{s: c.s, p: p})
	if az.deny != nil {
		return func(context.Context) kmsg.Response { return az.deny }, nil
	}
	r.req = az.req
	work, err := c.dispatch(r)
	if err != nil || az.finish == nil {
		return work, err
	}
	return func(ctx context.Context) kmsg.Response {
		resp := work(ctx)
		if resp != nil {
			az.finish(resp)
		}
		return resp
	}, nil
}
