package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-broker/floe/metadata"
)

// IncrementalAlterConfigs: v0 to v1.
//
// Topics only, onto floe's AlterTopicConfig (as `floe topic alter`): SET
// sets a key, DELETE removes it (back to its default); the other keys stay
// as they are. Keys are floe's topic config keys (retention, cleanup
// policy, iceberg.*, value.schema); an unknown key, a bad value, or a key
// both set and deleted refuses the resource with INVALID_CONFIG naming the
// key, and nothing of it changes. ValidateOnly checks without changing.
// Deviations: APPEND and SUBTRACT (for list configs) are refused with
// INVALID_CONFIG (floe's one list-like key, cleanup.policy, is set
// whole); floe has no Kafka broker configs (INVALID_REQUEST).

func init() { register(kmsg.IncrementalAlterConfigs, 0, 1, async(incrementalAlterConfigs)) }

func incrementalAlterConfigs(ctx context.Context, s *Server, _ *conn, req *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		set, remove, msg := incrementalChange(rr.Configs)
		if msg != "" {
			sr.ErrorCode, sr.ErrorMessage = kerr.InvalidConfig.Code, &msg
		} else {
			sr.ErrorCode, sr.ErrorMessage = changeTopicConfig(ctx, s, rr.ResourceType, rr.ResourceName, set, remove, req.ValidateOnly)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}

// incrementalChange turns a resource's operations into keys set and
// removed, or a refusal naming the key.
func incrementalChange(cfgs []kmsg.IncrementalAlterConfigsRequestResourceConfig) (set map[string]string, remove []string, refusal string) {
	set = map[string]string{}
	for _, c := range cfgs {
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			v := ""
			if c.Value != nil {
				v = *c.Value
			}
			set[c.Name] = v
		case kmsg.IncrementalAlterConfigOpDelete:
			if _, ok := metadata.TopicConfigKey(c.Name); !ok {
				return nil, nil, fmt.Sprintf("unknown topic config key %q", c.Name)
			}
			remove = append(remove, c.Name)
		default:
			return nil, nil, fmt.Sprintf("%s on %s: floe sets config values whole (use SET)", c.Op, c.Name)
		}
	}
	return set, remove, ""
}
