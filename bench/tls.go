package bench

import (
	"fmt"

	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/tlsconf/tlstest"
)

// setupTLS, with DeployConfig.TLS, makes a throwaway CA and a server
// certificate for 127.0.0.1 under the deployment's folder: the agents
// serve gRPC with it and ClientTLS trusts it.
func (d *Deployment) setupTLS() error {
	if !d.cfg.TLS {
		return nil
	}
	f, err := tlstest.WriteFiles(d.dir, "bench")
	if err != nil {
		return fmt.Errorf("bench: TLS certificates: %w", err)
	}
	if d.ClientTLS, err = client.TLSConfig(f.CAFile, "", ""); err != nil {
		return fmt.Errorf("bench: TLS certificates: %w", err)
	}
	d.tlsArgs = []string{"-grpc-tls-cert", f.ServerCert, "-grpc-tls-key", f.ServerKey}
	return nil
}
