package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/floe-broker/floe/objectstore/s3store"
)

// -pprof reaches serve, and mountPprof serves the profiles; without it
// the metrics listener has no /debug/pprof/.
func TestPprofSetting(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{{nil, false}, {[]string{"-pprof"}, true}} {
		c, err := loadArgs(t, "agent", required, nil, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if got := serverConfigOf(c, io.Discard).Pprof; got != tc.want {
			t.Errorf("args %v: Pprof %v, want %v", tc.args, got, tc.want)
		}
		e, err := loadArgs(t, "agent", required, map[string]string{"FLOE_SERVER_PPROF": "true"})
		if err != nil || !e.Server.Pprof {
			t.Errorf("FLOE_SERVER_PPROF=true: Pprof %v, %v", e.Server.Pprof, err)
		}
	}
	mux := http.NewServeMux()
	mountPprof(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/debug/pprof/cmdline: %s", resp.Status)
	}
}

// s3.unsigned_payload reaches the S3 store's configuration (off by default).
func TestS3UnsignedPayloadSetting(t *testing.T) {
	c, err := loadArgs(t, "agent", required, nil)
	if err != nil || c.s3Config().UnsignedPayload {
		t.Fatalf("default: UnsignedPayload %v, %v", c.s3Config().UnsignedPayload, err)
	}
	c, err = loadArgs(t, "agent", required+"  unsigned_payload: true\n", nil)
	if err != nil || !c.s3Config().UnsignedPayload {
		t.Fatalf("s3.unsigned_payload: true: UnsignedPayload %v, %v", c.s3Config().UnsignedPayload, err)
	}
}

// s3.put_checksum reaches the S3 store's configuration (crc32c by
// default); another value is refused, naming the setting.
func TestS3PutChecksumSetting(t *testing.T) {
	c, err := loadArgs(t, "agent", required, nil)
	if err != nil || c.s3Config().PutChecksum != s3store.PutChecksumCRC32C {
		t.Fatalf("default: PutChecksum %q, %v", c.s3Config().PutChecksum, err)
	}
	c, err = loadArgs(t, "agent", required+"  put_checksum: none\n", nil)
	if err != nil || c.s3Config().PutChecksum != s3store.PutChecksumNone {
		t.Fatalf("s3.put_checksum: none: PutChecksum %q, %v", c.s3Config().PutChecksum, err)
	}
	if _, err = loadArgs(t, "agent", required+"  put_checksum: md5\n", nil); err == nil || !strings.Contains(err.Error(), "s3.put_checksum") {
		t.Fatalf("s3.put_checksum: md5: %v, want an error naming s3.put_checksum", err)
	}
}
