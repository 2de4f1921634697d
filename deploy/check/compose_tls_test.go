package check

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestComposeTLS: deploy/compose.tls.yaml overrides services of
// compose.yaml only; each keeps its base command's flags and adds TLS
// flags of floe's, whose files are secrets it mounts, from files under
// deploy/certs/; its healthcheck asks /readyz over HTTPS.
func TestComposeTLS(t *testing.T) {
	base, _ := loadCompose(t)
	over, _ := loadComposeFile(t, "compose.tls.yaml")
	_, agentFlags := usageNames(floeUsage(t, "agent"))
	for name, secret := range over.Secrets {
		if !strings.HasPrefix(filepath.Clean(secret.File), "certs/") {
			t.Errorf("secret %s from %s: want a file under deploy/certs/", name, secret.File)
		}
	}
	if len(over.Services) == 0 {
		t.Fatal("no service overridden")
	}
	for name, s := range over.Services {
		b, ok := base.Services[name]
		if !ok {
			t.Errorf("compose.tls.yaml overrides %s, which compose.yaml lacks", name)
			continue
		}
		for _, a := range b.Command {
			if !slices.Contains(s.Command, a) {
				t.Errorf("%s: the TLS command drops %q of compose.yaml's", name, a)
			}
		}
		tlsFlags := 0
		for _, a := range s.Command[1:] {
			f := flagOf(a)
			if !agentFlags[f] {
				t.Errorf("%s arg %q is not a flag of floe agent", name, a)
			}
			if !strings.Contains(f, "tls") {
				continue
			}
			tlsFlags++
			_, path, _ := strings.Cut(a, "=")
			secret, ok := strings.CutPrefix(path, "/run/secrets/")
			if _, known := over.Secrets[secret]; !ok || !known || !slices.Contains(s.Secrets, secret) {
				t.Errorf("%s %s: want /run/secrets/NAME of a secret it mounts (mounts %v)", name, a, s.Secrets)
			}
		}
		for _, l := range []string{"grpc", "kafka", "http"} {
			if !slices.Contains(s.Command, "-"+l+"-tls-cert=/run/secrets/floe-server-crt") {
				t.Errorf("%s: no TLS on its %s listener", name, l)
			}
		}
		if h := s.Healthcheck; h == nil || !slices.ContainsFunc(h.Test, func(a string) bool { return strings.HasPrefix(a, "https://127.0.0.1:") }) {
			t.Errorf("%s healthcheck %+v: want /readyz over https", name, s.Healthcheck)
		}
		if tlsFlags == 0 {
			t.Errorf("%s: no TLS flag", name)
		}
	}
}
