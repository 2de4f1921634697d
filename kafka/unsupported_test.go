package kafka_test

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestUnsupportedAnswered: every API key kmsg knows, at a version floe does
// not serve (the newest kmsg knows for an unserved key; one past the
// newest and one before the oldest for a served key), is answered with
// its key's response, UNSUPPORTED_VERSION in its top-level error code
// where it has one, and the connection keeps serving.
func TestUnsupportedAnswered(t *testing.T) {
	b := startBroker(t, nil)
	c := dialRaw(t, b.addr)
	served := map[int16][2]int16{}
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(0)
	c.send(av, 1)
	_, body, err := c.recv()
	if err != nil {
		t.Fatal(err)
	}
	avr := kmsg.NewPtrApiVersionsResponse()
	avr.SetVersion(0)
	if err := avr.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	for _, k := range avr.ApiKeys {
		served[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	// Served above what ApiVersions lists (08_offset_commit.go):
	// probed past the version served.
	unadvertised := map[int16]int16{kmsg.OffsetCommit.Int16(): 10}
	for k, max := range unadvertised {
		served[k] = [2]int16{served[k][0], max}
	}
	corr := int32(10)
	for key := int16(0); key <= kmsg.MaxKey; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil || key == kmsg.ApiVersions.Int16() { // ApiVersions: TestApiVersionsUnsupported
			continue
		}
		var versions []int16
		if r, ok := served[key]; ok {
			versions = append(versions, r[1]+1)
			if r[0] > 0 {
				versions = append(versions, r[0]-1)
			}
		} else {
			versions = append(versions, req.MaxVersion())
		}
		for _, v := range versions {
			corr++
			req.SetVersion(v)
			// The body is garbage: an unserved request is answered
			// without being decoded.
			if _, err := c.nc.Write(frame(key, v, corr, "old-client", []byte{0xde, 0xad}, req.IsFlexible())); err != nil {
				t.Fatal(err)
			}
			got, body, err := c.recv()
			if err != nil {
				t.Fatalf("%s v%d: connection closed: %v", kmsg.NameForKey(key), v, err)
			}
			if got != corr {
				t.Fatalf("%s v%d: correlation %d, want %d", kmsg.NameForKey(key), v, got, corr)
			}
			resp := req.ResponseKind()
			resp.SetVersion(v)
			if resp.IsFlexible() {
				body = body[1:] // the response header's tags
			}
			if err := resp.ReadFrom(body); err != nil {
				t.Fatalf("%s v%d: answer does not decode: %v", kmsg.NameForKey(key), v, err)
			}
			// Want: the empty response with UNSUPPORTED_VERSION in its
			// top-level error code (where that version encodes one).
			want := req.ResponseKind()
			want.SetVersion(v)
			if f := reflect.ValueOf(want).Elem().FieldByName("ErrorCode"); f.IsValid() {
				f.SetInt(int64(kerr.UnsupportedVersion.Code))
			}
			if !bytes.Equal(want.AppendTo(nil), body) {
				t.Fatalf("%s v%d: answer %x, want %x", kmsg.NameForKey(key), v, body, want.AppendTo(nil))
			}
		}
	}
	// Still serving.
	c.send(av, 99)
	if got, _, err := c.recv(); err != nil || got != 99 {
		t.Fatalf("after the table: corr %d, %v", got, err)
	}
}
