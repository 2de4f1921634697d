package kafka

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeConfigs: v0 to v4.
//
// A topic's configs are the keys set on it (source DYNAMIC_TOPIC_CONFIG);
// a broker has none to report (floe's agent settings are not Kafka broker
// configs). Deviations: defaults are not listed, synonyms and
// documentation are never given.

func init() { register(kmsg.DescribeConfigs, 0, 4, async(describeConfigs)) }

func describeConfigs(ctx context.Context, s *Server, _ *conn, req *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		if rr.ResourceType == kmsg.ConfigResourceTypeTopic {
			t, err := s.be.KafkaTopic(ctx, rr.ResourceName)
			if err != nil {
				sr.ErrorCode, sr.ErrorMessage = errCode(err), errMessage(err)
			} else {
				want := map[string]bool{}
				for _, n := range rr.ConfigNames {
					want[n] = true
				}
				for k, v := range t.Config {
					if len(want) > 0 && !want[k] {
						continue
					}
					c := kmsg.NewDescribeConfigsResponseResourceConfig()
					val := v
					c.Name, c.Value, c.Source = k, &val, kmsg.ConfigSourceDynamicTopicConfig
					sr.Configs = append(sr.Configs, c)
				}
				sort.Slice(sr.Configs, func(i, j int) bool { return sr.Configs[i].Name < sr.Configs[j].Name })
			}
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp
}
