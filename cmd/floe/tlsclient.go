package main

import (
	"flag"
	"fmt"
	"regexp"
	"strconv"

	"google.golang.org/grpc"

	"github.com/floe-broker/floe/client"
)

// clientTLS is a client command's -tls, -ca, -cert and -key (env FLOE_TLS,
// FLOE_TLS_CA, FLOE_TLS_CERT, FLOE_TLS_KEY): TLS to the agents, the
// server's certificate checked against -ca (or the system's roots), and a
// client certificate for an agent that requires one. -tls-ca, -tls-cert
// and -tls-key are the same flags; floe produce has only -tls-key (its
// -key is the records' key).
type clientTLS struct {
	on            bool
	ca, cert, key string
	envErr        error
}

// register adds the flags to fs, their defaults from the environment.
func (c *clientTLS) register(fs *flag.FlagSet) {
	if v := envOr("FLOE_TLS", ""); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			c.envErr = fmt.Errorf("environment FLOE_TLS: %q is not true or false", v)
		}
		c.on = b
	}
	fs.BoolVar(&c.on, "tls", c.on, "connect with TLS (implied by -ca, -cert, -key; env FLOE_TLS)")
	c.ca, c.cert, c.key = envOr("FLOE_TLS_CA", ""), envOr("FLOE_TLS_CERT", ""), envOr("FLOE_TLS_KEY", "")
	for _, f := range []struct {
		p          *string
		name, help string
	}{
		{&c.ca, "ca", "PEM `file` of the CAs that sign the agents' certificates (default: the system's; env FLOE_TLS_CA)"},
		{&c.cert, "cert", "PEM client certificate `file`, for agents that require one (mutual TLS; env FLOE_TLS_CERT)"},
		{&c.key, "key", "PEM private key `file` of -cert (env FLOE_TLS_KEY)"},
	} {
		if !(f.name == "key" && fs.Name() == "floe produce") { // produce's -key is the records' key
			fs.StringVar(f.p, f.name, *f.p, f.help)
		}
		fs.StringVar(f.p, "tls-"+f.name, *f.p, "the same as -"+f.name)
	}
}

// enabled reports whether the command connects with TLS.
func (c *clientTLS) enabled() bool { return c.on || c.ca != "" || c.cert != "" || c.key != "" }

// dialOptions are client.Dial's options: TLS, or none (plaintext).
func (c *clientTLS) dialOptions() ([]grpc.DialOption, error) {
	if c.envErr != nil {
		return nil, c.envErr
	}
	if !c.enabled() {
		return nil, nil
	}
	switch {
	case c.cert != "" && c.key == "":
		return nil, fmt.Errorf("flag -key: is required with -cert")
	case c.key != "" && c.cert == "":
		return nil, fmt.Errorf("flag -cert: is required with -key")
	}
	cfg, err := client.TLSConfig(c.ca, c.cert, c.key)
	if err != nil {
		return nil, err
	}
	return []grpc.DialOption{client.WithTLS(cfg)}, nil
}

// tlsFailures are the texts of a connection whose TLS failed, and how each
// reads: %s is the agent's address.
var tlsFailures = []struct {
	re  *regexp.Regexp
	say string
}{
	{regexp.MustCompile(`first record does not look like a TLS handshake`),
		"floe at %s does not speak TLS on this port: drop -tls, -ca, -cert and -key (and FLOE_TLS*), or use the agent's TLS port"},
	{regexp.MustCompile(`server preface: EOF|closed before server preface`),
		"floe at %s closed the connection before answering gRPC: does it require TLS? add -tls and -ca FILE (the CA of its certificate)"},
	{regexp.MustCompile(`certificate signed by unknown authority`),
		"floe at %s presented a certificate no trusted CA signed: set -ca to the CA bundle of the agents' certificates"},
	{regexp.MustCompile(`x509: certificate is valid for [^,]*|cannot validate certificate for [^ ]*`),
		"floe at %s presented a certificate for another name: dial a name it holds"},
	{regexp.MustCompile(`x509: certificate has expired or is not yet valid`),
		"floe at %s presented a certificate that has expired or is not yet valid: renew the agent's certificate"},
	{regexp.MustCompile(`remote error: tls: (certificate required|bad certificate|unknown certificate authority|expired certificate|certificate revoked|unsupported certificate|unknown certificate)`),
		"floe at %s refused the client certificate: -cert and -key must be a valid certificate signed by the agent's client CA"},
	{regexp.MustCompile(`protocol version not supported|no supported versions`),
		"floe at %s and this client share no TLS version: floe accepts TLS 1.2 and later"},
}

// explainTLS reads a failed call's message as a TLS failure, if it is one.
func explainTLS(msg, addr string) (string, bool) {
	for _, f := range tlsFailures {
		if m := f.re.FindString(msg); m != "" {
			return fmt.Sprintf(f.say, addr) + " (" + m + ")", true
		}
	}
	return "", false
}
