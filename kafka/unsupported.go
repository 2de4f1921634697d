package kafka

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Unsupported APIs and versions: every request kmsg knows is answered,
// never a closed connection.
//
//   - ApiVersions of a version not served: a v0 answer with
//     UNSUPPORTED_VERSION and the versions served (see 18_api_versions.go).
//   - Any other key or version not served: the key's response at the
//     requested version, empty but for a top-level ErrorCode set to
//     UNSUPPORTED_VERSION where the response has one (what Apache Kafka's
//     AbstractRequest.getErrorResponse gives for an UnsupportedVersion
//     exception). Responses without a top-level error code (Produce,
//     Fetch's per-partition codes, ...) go out empty: the client finds
//     none of its topics answered and reports it.
//
// Deviation: Apache Kafka closes the connection on a version it cannot
// parse; floe answers, since it never needs the body to answer.
// A version above what kmsg encodes is answered in kmsg's newest layout.
// A key kmsg does not know closes the connection (there is no response
// shape to answer with).

// unsupportedResponse answers a key or version not served.
func unsupportedResponse(key, version int16) kmsg.Response {
	if key == kmsg.ApiVersions.Int16() {
		return unsupportedVersions()
	}
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(version)
	setErrorCode(resp, kerr.UnsupportedVersion.Code)
	return resp
}

// setErrorCode sets resp's top-level ErrorCode field, if it has one, and
// reports whether it did.
func setErrorCode(resp kmsg.Response, code int16) bool {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	f := v.Elem().FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 || !f.CanSet() {
		return false
	}
	f.SetInt(int64(code))
	return true
}
