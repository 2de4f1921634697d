package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/metadata"
)

// AlterConfigs: v0 to v2.
//
// Topics only, onto floe's AlterTopicConfig (as `floe topic alter`): as in
// Apache Kafka the configs given replace the topic's, so a key set before
// and not given is removed (back to its default). Keys are floe's topic
// config keys (retention.ms, retention.bytes, cleanup.policy, iceberg.*,
// value.schema, ...); an unknown key or a bad value refuses the resource
// with INVALID_CONFIG naming the key, and nothing of it changes.
// ValidateOnly checks without changing. Deviation: floe has no Kafka
// broker configs; a broker resource gets INVALID_REQUEST.

func init() { register(kmsg.AlterConfigs, 0, 2, async(alterConfigs)) }

func alterConfigs(ctx context.Context, s *Server, _ *conn, req *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		set := map[string]string{}
		for _, c := range rr.Configs {
			if c.Value != nil {
				set[c.Name] = *c.Value
			}
		}
		var remove []string
		if rr.ResourceType == kmsg.ConfigResourceTypeTopic {
			t, err := s.be.KafkaTopic(ctx, rr.ResourceName)
			if err != nil {
				sr.ErrorCode, sr.ErrorMessage = errCode(err), errMessage(err)
				resp.Resources = append(resp.Resources, sr)
				continue
			}
			for k := range t.Config {
				if _, ok := set[k]; !ok {
					remove = append(remove, k)
				}
			}
		}
		sr.ErrorCode, sr.ErrorMessage = changeTopicConfig(ctx, s, rr.ResourceType, rr.ResourceName, set, remove, req.ValidateOnly)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// changeTopicConfig applies one resource's change (AlterConfigs and
// IncrementalAlterConfigs) and returns its error code and message.
func changeTopicConfig(ctx context.Context, s *Server, typ kmsg.ConfigResourceType, name string, set map[string]string, remove []string, validateOnly bool) (int16, *string) {
	if typ != kmsg.ConfigResourceTypeTopic {
		msg := fmt.Sprintf("floe has no Kafka %s configs; only topic configs can be altered", typ)
		return kerr.InvalidRequest.Code, &msg
	}
	if len(set) == 0 && len(remove) == 0 {
		return 0, nil
	}
	if err := metadata.CheckConfigChange(set, remove); err != nil {
		msg := err.Error()
		return kerr.InvalidConfig.Code, &msg
	}
	if validateOnly {
		if _, err := s.be.KafkaTopic(ctx, name); err != nil {
			return errCode(err), errMessage(err)
		}
		return 0, nil
	}
	if _, err := s.be.AlterTopicConfig(ctx, &floev1.AlterTopicConfigRequest{Name: name, Set: set, Remove: remove}); err != nil {
		if status.Code(err) == codes.InvalidArgument {
			return kerr.InvalidConfig.Code, errMessage(err)
		}
		return errCode(err), errMessage(err)
	}
	return 0, nil
}
