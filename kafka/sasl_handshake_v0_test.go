package kafka_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestSaslHandshakeVersionsForLibrdkafka: ApiVersions advertises
// SaslHandshake from v0 (librdkafka enables SCRAM only then, and kcat
// failed with "SASL Handshake not supported by broker" before); a v0
// handshake, whose tokens floe cannot read, is answered
// UNSUPPORTED_VERSION; v1 works.
func TestSaslHandshakeVersionsForLibrdkafka(t *testing.T) {
	b := startAuthBroker(t)
	c := dialRaw(t, b.addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "test", "1"
	r, err := roundTrip(c, av, 1)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, k := range r.(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == kmsg.SASLHandshake.Int16() {
			found = true
			if k.MinVersion != 0 || k.MaxVersion != 1 {
				t.Errorf("SaslHandshake advertised %d..%d, want 0..1", k.MinVersion, k.MaxVersion)
			}
		}
	}
	if !found {
		t.Fatal("SaslHandshake not advertised")
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(0)
	hs.Mechanism = "PLAIN"
	r, err = roundTrip(c, hs, 2)
	if err != nil || r.(*kmsg.SASLHandshakeResponse).ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("v0 handshake: %+v, %v; want UNSUPPORTED_VERSION", r, err)
	}
	plainLogin(t, c, "alice") // v1 on the same connection still works
}
