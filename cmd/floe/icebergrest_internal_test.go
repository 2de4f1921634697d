package main

import (
	"flag"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/floe-broker/floe/iceberg/rest"
)

// TestIcebergRESTLimitSettings: the REST catalog's limits are settings of
// floe compactor and floe dev (defaults of rest.DefaultConfig, YAML keys,
// environment, flags), refused out of range naming the setting, and reach
// the handler.
func TestIcebergRESTLimitSettings(t *testing.T) {
	def := rest.DefaultConfig()
	for _, command := range []string{"compactor", "dev"} {
		req := required
		if command == "dev" {
			req = ""
		}
		c, err := loadArgs(t, command, req, nil)
		if err != nil {
			t.Fatalf("%s defaults: %v", command, err)
		}
		if c.Iceberg.RESTMaxRequestBytes != def.MaxRequestBytes || c.Iceberg.RESTMaxPathBytes != def.MaxPathBytes {
			t.Fatalf("%s defaults %d/%d, want rest.DefaultConfig's %d/%d", command,
				c.Iceberg.RESTMaxRequestBytes, c.Iceberg.RESTMaxPathBytes, def.MaxRequestBytes, def.MaxPathBytes)
		}
		c, err = loadArgs(t, command, req+"iceberg:\n  rest_max_request_bytes: 0\n  rest_max_path_bytes: 300\n", nil)
		if err != nil || c.Iceberg.RESTMaxRequestBytes != 0 || c.Iceberg.RESTMaxPathBytes != 300 {
			t.Fatalf("%s yaml: %+v %v", command, c.Iceberg, err)
		}
		c, err = loadArgs(t, command, req, map[string]string{"FLOE_ICEBERG_REST_MAX_PATH_BYTES": "500"},
			"-iceberg-rest-max-request-bytes", "2048")
		if err != nil || c.Iceberg.RESTMaxRequestBytes != 2048 || c.Iceberg.RESTMaxPathBytes != 500 {
			t.Fatalf("%s flag and env: %+v %v", command, c.Iceberg, err)
		}
		for _, tc := range []struct{ yaml, want string }{
			{"iceberg:\n  rest_max_request_bytes: -1\n", "iceberg.rest_max_request_bytes: -1 must not be negative"},
			{"iceberg:\n  rest_max_path_bytes: 0\n", "iceberg.rest_max_path_bytes: 0 must be positive"},
			{"iceberg:\n  rest_max_path_bytes: 63\n", "iceberg.rest_max_path_bytes: 63 must be at least 64"},
		} {
			if _, err := loadArgs(t, command, req+tc.yaml, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s %q: error %v, want %q", command, tc.yaml, err, tc.want)
			}
		}
	}
	for command, want := range map[string]bool{"agent": false, "compactor": true, "dev": true} {
		fs := flag.NewFlagSet(command, flag.ContinueOnError)
		registerConfig(fs, command)
		for _, name := range []string{"iceberg-rest-max-request-bytes", "iceberg-rest-max-path-bytes"} {
			if got := fs.Lookup(name) != nil; got != want {
				t.Fatalf("floe %s has flag -%s: %v, want %v", command, name, got, want)
			}
		}
	}

	// The settings reach the handler: a path over the bound gets 400, a
	// body over it 413, each naming the bound.
	s := DefaultIcebergSettings()
	s.RESTMaxRequestBytes, s.RESTMaxPathBytes = 10, 100
	h, err := rest.New(nil, s.restConfig(nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target, body string
		code         int
		want         string
	}{
		{"/iceberg/v1/namespaces/" + strings.Repeat("n", 100), "", http.StatusBadRequest, "over 100 bytes (iceberg.rest_max_path_bytes)"},
		{"/iceberg/v1/config", strings.Repeat("b", 11), http.StatusRequestEntityTooLarge, "over 10 (iceberg.rest_max_request_bytes)"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.target, strings.NewReader(tc.body)))
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) {
			t.Fatalf("%s with %d body bytes: %d %s, want %d naming %q", tc.target, len(tc.body), rec.Code, rec.Body.String(), tc.code, tc.want)
		}
	}
}
