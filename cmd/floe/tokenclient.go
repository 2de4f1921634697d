package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"

	"github.com/floe-broker/floe/client"
)

// clientToken is a client command's -token and -token-file (env
// FLOE_TOKEN, FLOE_TOKEN_FILE): the bearer token sent with every call to
// an agent with auth.enabled. A token goes over TLS, or in plaintext only
// to a loopback address (floe dev on 127.0.0.1: the token does not leave
// the host) or with -token-plaintext.
type clientToken struct {
	token, file string
	plaintext   bool
}

// register adds the flags to fs, their defaults from the environment.
func (c *clientToken) register(fs *flag.FlagSet) {
	c.token, c.file = envOr("FLOE_TOKEN", ""), envOr("FLOE_TOKEN_FILE", "")
	fs.StringVar(&c.token, "token", c.token, "bearer `token` for an agent with auth.enabled, from 'floe token create' (env FLOE_TOKEN; prefer -token-file: ps shows arguments)")
	fs.StringVar(&c.file, "token-file", c.file, "`file` whose first line is the bearer token (env FLOE_TOKEN_FILE)")
	fs.BoolVar(&c.plaintext, "token-plaintext", false, "send the token over a plaintext connection to a non-loopback address too (anyone on the path can replay it)")
}

// value is the token, read from -token-file if given: "" for none.
func (c *clientToken) value() (string, error) {
	if c.token != "" && c.file != "" {
		return "", fmt.Errorf("flag -token-file: give -token or -token-file, not both")
	}
	if c.file == "" {
		return c.token, nil
	}
	b, err := os.ReadFile(c.file)
	if err != nil {
		return "", fmt.Errorf("flag -token-file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if line = strings.TrimSpace(line); line == "" {
		return "", fmt.Errorf("flag -token-file: %s: the first line is empty", c.file)
	}
	return line, nil
}

// dialOptions are client.Dial's options for addr: TLS (-tls …) and the
// bearer token.
func (a *addrList) dialOptions(addr string) ([]grpc.DialOption, error) {
	opts, err := a.tls.dialOptions()
	if err != nil {
		return nil, err
	}
	tok, err := a.token.value()
	if err != nil || tok == "" {
		return opts, err
	}
	switch {
	case a.tls.enabled():
		return append(opts, client.WithToken(tok)), nil
	case a.token.plaintext || isLoopback(addr):
		return append(opts, client.WithTokenOverPlaintext(tok)), nil
	}
	return nil, fmt.Errorf("flag -token: refusing to send the token in plaintext to %s: add -tls and -ca FILE, or -token-plaintext to send it anyway", addr)
}

// isLoopback reports whether addr's host is localhost or a loopback IP.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
