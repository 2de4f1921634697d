package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/floe-broker/floe/access"
	"github.com/floe-broker/floe/auth"
)

// AuthSettings switch authentication and ACLs on for every listener
// (package access; docs/security.md).
type AuthSettings struct {
	Enabled           bool          `yaml:"enabled" flag:"auth-enabled" help:"require a principal (bearer token, client certificate or SASL) on every listener and check ACLs; off, anyone who reaches a port may do anything (floe dev's default)"`
	Superusers        string        `yaml:"superusers" flag:"auth-superusers" help:"comma-separated principals that bypass the ACLs (User:admin,User:ops)"`
	CertPrincipal     string        `yaml:"cert_principal" flag:"auth-cert-principal" help:"field of a verified client certificate that names its principal: cn, san-dns or san-email"`
	HTTPOpen          string        `yaml:"http_open" flag:"auth-http-open" help:"comma-separated parts of the HTTP listener left open without a token when auth is on: metrics, console, iceberg, pprof (/healthz and /readyz always are)"`
	DenialLogInterval time.Duration `yaml:"denial_log_interval" flag:"auth-denial-log-interval" check:"positive" help:"a denial of one principal, operation and resource is logged at most once per this interval (all are counted in floe_auth_denied_total)"`
	Refresh           time.Duration `yaml:"refresh" flag:"auth-refresh" check:"positive" help:"longest an agent goes without reloading the ACLs (it also reloads on every change notification), and how long it trusts a token it verified before reading it again: a revoked token is refused within this period"`
	DenialLogMaxKeys  int           `yaml:"denial_log_max_keys" flag:"auth-denial-log-max-keys" check:"positive" help:"distinct (principal, operation, resource) denials remembered for that interval; past it the oldest are forgotten"`
}

// defaultAuthSettings are the settings' defaults: off.
func defaultAuthSettings() AuthSettings {
	d := access.DefaultConfig()
	return AuthSettings{CertPrincipal: d.CertPrincipal.String(), DenialLogInterval: d.DenialLogInterval, DenialLogMaxKeys: d.MaxDenialKeys,
		Refresh: auth.DefaultVerifierConfig().Refresh}
}

// accessConfig is the settings as package access takes them, or an
// error naming the bad setting.
func (a AuthSettings) accessConfig() (access.Config, error) {
	c := access.DefaultConfig()
	c.Enabled, c.DenialLogInterval, c.MaxDenialKeys = a.Enabled, a.DenialLogInterval, a.DenialLogMaxKeys
	var err error
	if c.Superusers, err = access.ParseSuperusers(a.Superusers); err != nil {
		return c, fmt.Errorf("auth.superusers: %w", err)
	}
	if c.CertPrincipal, err = access.ParseCertRule(a.CertPrincipal); err != nil {
		return c, fmt.Errorf("auth.cert_principal: %w", err)
	}
	if _, err := parseHTTPOpen(a.HTTPOpen); err != nil {
		return c, fmt.Errorf("auth.http_open: %w", err)
	}
	return c, c.Validate()
}

func (a AuthSettings) validate() error {
	_, err := a.accessConfig()
	return err
}

// httpParts are the parts of the HTTP listener auth.http_open may open.
var httpParts = []string{"metrics", "console", "iceberg", "pprof"}

// parseHTTPOpen reads auth.http_open.
func parseHTTPOpen(s string) (map[string]bool, error) {
	open := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		known := false
		for _, p := range httpParts {
			known = known || p == f
		}
		if !known {
			return nil, fmt.Errorf("%q is not one of %s", f, strings.Join(httpParts, ", "))
		}
		open[f] = true
	}
	return open, nil
}
