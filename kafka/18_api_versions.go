package kafka

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions: v0 to v3 (v4 and up exist only for new features floe does
// not have).
//
// An unsupported version is answered, as Apache Kafka does, with a v0
// response carrying UNSUPPORTED_VERSION and the versions served, so that
// the client retries with one of them; the connection stays open.
// Deviation: no supported or finalized features are listed (KRaft
// metadata.version and friends mean nothing here).

func init() { register(kmsg.ApiVersions, 0, 3, async(apiVersions)) }

func apiVersions(_ context.Context, _ *Server, _ *conn, req *kmsg.ApiVersionsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = servedKeys()
	return resp
}

// unsupportedVersions is the v0 answer to an ApiVersions version not served.
func unsupportedVersions() kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ApiKeys = servedKeys()
	return resp
}

func servedKeys() []kmsg.ApiVersionsResponseApiKey {
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(apis))
	for k, a := range apis {
		out = append(out, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: a.min, MaxVersion: a.advertised})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ApiKey < out[j].ApiKey })
	return out
}
