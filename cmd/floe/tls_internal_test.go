package main

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-broker/floe/internal/tlsconf"
	"github.com/floe-broker/floe/internal/tlsconf/tlstest"
)

// tlsMetricsWithListener registers the TLS metrics with one listener, so
// that they export samples (their types are read from them).
func tlsMetricsWithListener(t *testing.T, reg prometheus.Registerer) *tlsMetrics {
	t.Helper()
	f, err := tlstest.WriteFiles(t.TempDir(), "metrics")
	if err != nil {
		t.Fatal(err)
	}
	cfg := tlsconf.DefaultConfig()
	cfg.CertFile, cfg.KeyFile = f.ServerCert, f.ServerKey
	srv, err := tlsconf.NewServer(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := newTLSMetrics(reg)
	m.add("grpc", srv)
	return m
}

// TestTLSSettings: each listener's TLS settings, from the file, the
// environment and flags, reach its configuration; half a pair, a client CA
// without a certificate and an unknown version are refused naming the
// setting; a listener the command does not run is not checked.
func TestTLSSettings(t *testing.T) {
	c, err := loadArgs(t, "agent", required+"tls:\n  grpc_cert_file: g.crt\n  grpc_key_file: g.key\n  min_version: \"1.3\"\n",
		map[string]string{"FLOE_TLS_KAFKA_CERT_FILE": "k.crt", "FLOE_TLS_KAFKA_KEY_FILE": "k.key"},
		"-http-tls-cert", "h.crt", "-http-tls-key", "h.key", "-http-tls-client-ca", "ca.crt")
	if err != nil {
		t.Fatal(err)
	}
	sc := serverConfigOf(c, nil)
	if g := sc.GRPCTLS; g.CertFile != "g.crt" || g.KeyFile != "g.key" || g.MinVersion != tls.VersionTLS13 || g.ClientCAFile != "" {
		t.Errorf("grpc TLS %+v", g)
	}
	if k := sc.KafkaTLS; k.CertFile != "k.crt" || k.KeyFile != "k.key" || !k.Enabled() {
		t.Errorf("kafka TLS %+v", k)
	}
	if h := sc.HTTPTLS; h.CertFile != "h.crt" || h.ClientCAFile != "ca.crt" {
		t.Errorf("http TLS %+v", h)
	}
	if d, _ := loadArgs(t, "agent", required, nil); serverConfigOf(d, nil).GRPCTLS.Enabled() {
		t.Error("TLS on by default")
	}

	for _, tc := range []struct {
		command string
		args    []string
		want    string
	}{
		{"agent", []string{"-grpc-tls-cert", "c"}, "tls.grpc_cert_file: needs tls.grpc_key_file too (set by flag -grpc-tls-cert)"},
		{"agent", []string{"-kafka-tls-key", "k"}, "tls.kafka_key_file: needs tls.kafka_cert_file too"},
		{"dev", []string{"-http-tls-client-ca", "ca"}, "tls.http_client_ca_file: needs tls.http_cert_file"},
		{"compactor", []string{"-http-tls-cert", "c"}, "tls.http_cert_file: needs tls.http_key_file too"},
		{"agent", []string{"-tls-min-version", "1.1"}, `tls.min_version: "1.1" must be 1.2 or 1.3`},
		{"agent", []string{"-tls-reload-interval", "0s"}, "tls.reload_interval: 0s must be positive"},
	} {
		yaml := required
		if tc.command == "dev" {
			yaml = ""
		}
		_, err := loadArgs(t, tc.command, yaml, nil, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want %q", tc.command, tc.args, err, tc.want)
		}
	}
	// The compactor has no gRPC listener: its settings are neither flags nor checked.
	c = DefaultServerConfig("compactor")
	c.TLS.GRPCCertFile = "c"
	if err := c.TLS.validate("compactor"); err != nil {
		t.Errorf("compactor checks the gRPC listener's TLS: %v", err)
	}
}

// TestTLSMetrics: a TLS listener's certificate expiry is exported, and a
// plaintext listener exports nothing.
func TestTLSMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := tlsMetricsWithListener(t, reg)
	m.add("kafka", nil)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			v := s.GetGauge().GetValue() + s.GetCounter().GetValue()
			got = append(got, mf.GetName()+"/"+s.GetLabel()[0].GetValue())
			if mf.GetName() == "floe_tls_certificate_expiry_timestamp_seconds" && v < float64(time.Now().Unix()) {
				t.Errorf("expiry %v is in the past", v)
			}
		}
	}
	want := "[floe_tls_certificate_expiry_timestamp_seconds/grpc floe_tls_reload_failures_total/grpc]"
	if fmt.Sprint(got) != want {
		t.Fatalf("exported %v, want %s", got, want)
	}
}
