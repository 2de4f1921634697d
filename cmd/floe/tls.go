package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/floe-broker/floe/internal/tlsconf"
)

// TLSSettings are the listeners' TLS (package internal/tlsconf): each
// listener has its own certificate, key and optional client CA (mutual
// TLS); empty files leave it plaintext. Certificates are re-read when
// their files change, without a restart.
type TLSSettings struct {
	GRPCCertFile     string `yaml:"grpc_cert_file" flag:"grpc-tls-cert" cmds:"agent,dev" help:"gRPC listener: PEM certificate (chain) file; set with grpc_key_file to serve TLS (empty: plaintext)"`
	GRPCKeyFile      string `yaml:"grpc_key_file" flag:"grpc-tls-key" cmds:"agent,dev" help:"gRPC listener: PEM private key file of grpc_cert_file"`
	GRPCClientCAFile string `yaml:"grpc_client_ca_file" flag:"grpc-tls-client-ca" cmds:"agent,dev" help:"gRPC listener: PEM bundle of the CAs of client certificates; set, every client must present one it signed (mutual TLS)"`

	KafkaCertFile     string `yaml:"kafka_cert_file" flag:"kafka-tls-cert" cmds:"agent,dev" help:"Kafka listener: PEM certificate (chain) file; set with kafka_key_file to serve TLS (Kafka's SSL listener; empty: plaintext)"`
	KafkaKeyFile      string `yaml:"kafka_key_file" flag:"kafka-tls-key" cmds:"agent,dev" help:"Kafka listener: PEM private key file of kafka_cert_file"`
	KafkaClientCAFile string `yaml:"kafka_client_ca_file" flag:"kafka-tls-client-ca" cmds:"agent,dev" help:"Kafka listener: PEM bundle of the CAs of client certificates; set, every client must present one it signed (ssl.client.auth=required)"`

	HTTPCertFile     string `yaml:"http_cert_file" flag:"http-tls-cert" help:"HTTP listener (metrics, health, console, Iceberg REST catalog): PEM certificate (chain) file; set with http_key_file to serve HTTPS (empty: plain HTTP)"`
	HTTPKeyFile      string `yaml:"http_key_file" flag:"http-tls-key" help:"HTTP listener: PEM private key file of http_cert_file"`
	HTTPClientCAFile string `yaml:"http_client_ca_file" flag:"http-tls-client-ca" help:"HTTP listener: PEM bundle of the CAs of client certificates; set, every client must present one it signed (probes and scrapers too)"`

	MinVersion     string        `yaml:"min_version" flag:"tls-min-version" help:"oldest TLS version the listeners accept: 1.2 or 1.3"`
	ReloadInterval time.Duration `yaml:"reload_interval" flag:"tls-reload-interval" check:"positive" help:"how often, at most, a handshake looks at the certificate files (one stat each) to pick up a renewed certificate"`
}

// DefaultTLSSettings are plaintext listeners, TLS 1.2 at least once on,
// files looked at at most once a second.
func DefaultTLSSettings() TLSSettings {
	return TLSSettings{MinVersion: "1.2", ReloadInterval: tlsconf.DefaultConfig().ReloadInterval}
}

// listenerTLS is one listener's files and the prefix of their settings.
type listenerTLS struct {
	prefix              string // "tls.grpc"
	cert, key, clientCA string
	minVersion          uint16
	reloadInterval      time.Duration
	usedBy              []string // the commands with this listener
}

// listeners are the settings' three listeners.
func (s TLSSettings) listeners() []listenerTLS {
	v := uint16(tls.VersionTLS12)
	if s.MinVersion == "1.3" {
		v = tls.VersionTLS13
	}
	return []listenerTLS{
		{prefix: "tls.grpc", cert: s.GRPCCertFile, key: s.GRPCKeyFile, clientCA: s.GRPCClientCAFile, minVersion: v, reloadInterval: s.ReloadInterval, usedBy: []string{"agent", "dev"}},
		{prefix: "tls.kafka", cert: s.KafkaCertFile, key: s.KafkaKeyFile, clientCA: s.KafkaClientCAFile, minVersion: v, reloadInterval: s.ReloadInterval, usedBy: []string{"agent", "dev"}},
		{prefix: "tls.http", cert: s.HTTPCertFile, key: s.HTTPKeyFile, clientCA: s.HTTPClientCAFile, minVersion: v, reloadInterval: s.ReloadInterval, usedBy: []string{"agent", "dev", "compactor"}},
	}
}

func (l listenerTLS) config() tlsconf.Config {
	c := tlsconf.DefaultConfig()
	c.CertFile, c.KeyFile, c.ClientCAFile = l.cert, l.key, l.clientCA
	c.MinVersion, c.ReloadInterval = l.minVersion, l.reloadInterval
	return c
}

// grpcTLS, kafkaTLS and httpTLS are the listeners' configurations.
func (s TLSSettings) grpcTLS() tlsconf.Config  { return s.listeners()[0].config() }
func (s TLSSettings) kafkaTLS() tlsconf.Config { return s.listeners()[1].config() }
func (s TLSSettings) httpTLS() tlsconf.Config  { return s.listeners()[2].config() }

// validate names the first bad TLS setting of command.
func (s TLSSettings) validate(command string) error {
	if s.MinVersion != "1.2" && s.MinVersion != "1.3" {
		return fmt.Errorf("tls.min_version: %q must be 1.2 or 1.3", s.MinVersion)
	}
	for _, l := range s.listeners() {
		used := false
		for _, c := range l.usedBy {
			used = used || c == command
		}
		switch {
		case !used:
		case l.cert != "" && l.key == "":
			return fmt.Errorf("%s_cert_file: needs %s_key_file too", l.prefix, l.prefix)
		case l.cert == "" && l.key != "":
			return fmt.Errorf("%s_key_file: needs %s_cert_file too", l.prefix, l.prefix)
		case l.cert == "" && l.clientCA != "":
			return fmt.Errorf("%s_client_ca_file: needs %s_cert_file and %s_key_file (mutual TLS is TLS)", l.prefix, l.prefix, l.prefix)
		}
	}
	return nil
}

// listenTLS wraps lis in name's TLS when cfg is on (lis itself otherwise),
// exported by m (optional); a certificate that does not load closes lis
// and names the listener.
func listenTLS(lis net.Listener, cfg tlsconf.Config, name string, log *slog.Logger, m *tlsMetrics) (net.Listener, error) {
	srv, err := serverTLS(cfg, name, log, m)
	if err != nil || srv == nil {
		if err != nil {
			lis.Close()
		}
		return lis, err
	}
	return srv.Listener(lis), nil
}

// serverTLS loads name's TLS, exported by m (optional): nil when it is off.
func serverTLS(cfg tlsconf.Config, name string, log *slog.Logger, m *tlsMetrics) (*tlsconf.Server, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	srv, err := tlsconf.NewServer(cfg, log.With("listener", name))
	if err != nil {
		return nil, fmt.Errorf("%s listener TLS: %w", name, err)
	}
	m.add(name, srv)
	return srv, nil
}

// exportS3CA hands s3.ca_file to the Iceberg writer: iceberg-go's S3 client
// reads AWS_CA_BUNDLE, which the setting replaces (it is the explicit one;
// some systems set AWS_CA_BUNDLE to the system's bundle).
func exportS3CA(caFile string) {
	if caFile != "" {
		_ = os.Setenv("AWS_CA_BUNDLE", caFile)
	}
}
