package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/auth"
)

// TestEveryServedKeyHasARule: an API served without an authorization rule
// (a key registered and forgotten in kafkaRules) fails here.
func TestEveryServedKeyHasARule(t *testing.T) {
	for key := range apis {
		if _, ok := kafkaRules[key]; !ok {
			t.Errorf("%s (key %d) is served without an authorization rule", kmsg.NameForKey(key), key)
		}
	}
	if len(apis) < 30 {
		t.Fatalf("only %d keys served", len(apis))
	}
}

// fakeChecker allows what is in its set ("READ TOPIC t").
type fakeChecker map[string]bool

func (f fakeChecker) allowed(op auth.Operation, res auth.Resource) bool { return f.permits(op, res) }
func (f fakeChecker) permits(op auth.Operation, res auth.Resource) bool {
	return f[op.String()+" "+res.Type.String()+" "+res.Name]
}

func TestAuthorizeKafka(t *testing.T) {
	ck := fakeChecker{"WRITE TOPIC ok": true, "READ GROUP g": true, "READ TOPIC ok": true, "DESCRIBE TOPIC ok": true}

	// Produce: the denied topic is removed and answered with its partitions.
	prod := kmsg.NewPtrProduceRequest()
	for _, name := range []string{"ok", "no"} {
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = name
		for p := range int32(2) {
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition = p
			tp.Partitions = append(tp.Partitions, pp)
		}
		prod.Topics = append(prod.Topics, tp)
	}
	az := authorizeKafka(prod, ck)
	if az.deny != nil || len(prod.Topics) != 1 || prod.Topics[0].Topic != "ok" {
		t.Fatalf("produce request after authz: %+v", prod.Topics)
	}
	resp := prod.ResponseKind().(*kmsg.ProduceResponse)
	az.finish(resp)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != "no" || len(resp.Topics[0].Partitions) != 2 ||
		resp.Topics[0].Partitions[1].ErrorCode != topicDenied || resp.Topics[0].Partitions[1].Partition != 1 {
		t.Fatalf("produce answer: %+v", resp.Topics)
	}

	// A group API without READ on the group: refused whole.
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group = "other"
	if az := authorizeKafka(hb, ck); az.deny == nil || az.deny.(*kmsg.HeartbeatResponse).ErrorCode != groupDenied {
		t.Fatalf("heartbeat: %+v", az)
	}

	// OffsetCommit without the group: every partition GROUP_AUTHORIZATION_FAILED.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group = "other"
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = "ok"
	oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 3}}
	oc.Topics = append(oc.Topics, oct)
	az = authorizeKafka(oc, ck)
	ocr, _ := az.deny.(*kmsg.OffsetCommitResponse)
	if ocr == nil || len(ocr.Topics) != 1 || ocr.Topics[0].Partitions[0].ErrorCode != groupDenied || ocr.Topics[0].Partitions[0].Partition != 3 {
		t.Fatalf("offset commit: %+v", az)
	}

	// Metadata: a listing keeps the describable topics; named ones are refused.
	for _, named := range []bool{false, true} {
		md := kmsg.NewPtrMetadataRequest()
		if named {
			md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("ok")}, {Topic: kmsg.StringPtr("no")}}
		}
		az := authorizeKafka(md, ck)
		mr := md.ResponseKind().(*kmsg.MetadataResponse)
		for _, n := range []string{"ok", "no"} {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = kmsg.StringPtr(n)
			mt.Partitions = []kmsg.MetadataResponseTopicPartition{{Partition: 0}}
			mr.Topics = append(mr.Topics, mt)
		}
		az.finish(mr)
		switch {
		case !named && (len(mr.Topics) != 1 || *mr.Topics[0].Topic != "ok"):
			t.Fatalf("metadata listing: %+v", mr.Topics)
		case named && (len(mr.Topics) != 2 || mr.Topics[1].ErrorCode != topicDenied || len(mr.Topics[1].Partitions) != 0):
			t.Fatalf("metadata named: %+v", mr.Topics)
		}
	}

	// A cluster API without the permission.
	ca := kmsg.NewPtrCreateACLsRequest()
	ca.Creations = make([]kmsg.CreateACLsRequestCreation, 2)
	az = authorizeKafka(ca, ck)
	if car, _ := az.deny.(*kmsg.CreateACLsResponse); car == nil || len(car.Results) != 2 || car.Results[1].ErrorCode != clusterDenied {
		t.Fatalf("create acls: %+v", az)
	}

	// Configs: a broker resource needs the cluster.
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dc.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "0"}}
	az = authorizeKafka(dc, ck)
	dcr := dc.ResponseKind().(*kmsg.DescribeConfigsResponse)
	az.finish(dcr)
	if len(dc.Resources) != 0 || len(dcr.Resources) != 1 || dcr.Resources[0].ErrorCode != clusterDenied {
		t.Fatalf("describe configs: %+v", dcr)
	}
}
