package check

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// hasFlag reports whether c's args give -name.
func hasFlag(c *corev1.Container, name string) bool {
	return slices.ContainsFunc(c.Args, func(a string) bool { return flagOf(a) == name })
}

// flagValue is the value of c's -name=value ("" when absent).
func flagValue(c *corev1.Container, name string) string {
	for _, a := range c.Args {
		if flagOf(a) == name {
			_, v, _ := strings.Cut(a, "=")
			return v
		}
	}
	return ""
}

// secretOfPath is the Secret whose volume c mounts at the folder of path
// (read-only, not through subPath, so that the kubelet's updates reach
// it), and the key path names in it.
func secretOfPath(t *testing.T, pod corev1.PodSpec, c *corev1.Container, path string) (secret, key string) {
	t.Helper()
	dir, key := filepath.Dir(path), filepath.Base(path)
	for _, m := range c.VolumeMounts {
		if m.MountPath != dir {
			continue
		}
		if m.SubPath != "" || !m.ReadOnly {
			t.Errorf("%s mounts %s with subPath %q, readOnly %v: want the whole volume, read-only (reloads need the kubelet's updates)", c.Name, dir, m.SubPath, m.ReadOnly)
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				if mode := v.Secret.DefaultMode; mode == nil || *mode&0o040 == 0 || *mode&0o007 != 0 {
					t.Errorf("volume %s mode %v: want group-readable (fsGroup), nothing for others", v.Name, mode)
				}
				return v.Secret.SecretName, key
			}
		}
	}
	t.Errorf("%s: no Secret volume mounted at %s (for %s)", c.Name, dir, path)
	return "", key
}

// TestHelmChartTLS: with tls.* set, every listener's flags name files of
// its own Secret, mounted whole; mutual TLS adds the Secret's ca.crt;
// probes turn HTTPS; the PodMonitor and the helm test check the HTTP
// certificate against its Secret's CA; the outbound CAs are mounted (S3's
// as -s3-ca-file). The rendering keeps every invariant of checkRendering.
func TestHelmChartTLS(t *testing.T) {
	r := render(t, "-f", filepath.Join("testdata", "values-tls.yaml"))
	checkRendering(t, r, check{
		image: "registry.example.com/floe:" + chartAppVersion(t), hpa: true, pdb: true, networkPolicy: true, compactor: 1,
		pgSecret: "floe-db", pgKey: "url", envPresent: []string{"FLOE_POSTGRES_URL", "FLOE_S3_ENDPOINT"},
		serviceType: corev1.ServiceTypeClusterIP, serviceAccount: "rel-floe",
	})
	agent := r.deployments["rel-floe-agent"].Spec.Template.Spec
	comp := r.deployments["rel-floe-compactor"].Spec.Template.Spec
	for _, tc := range []struct {
		name   string
		pod    corev1.PodSpec
		flag   string
		secret string
		key    string
	}{
		{"agent", agent, "grpc-tls-cert", "floe-grpc-tls", "tls.crt"},
		{"agent", agent, "grpc-tls-key", "floe-grpc-tls", "tls.key"},
		{"agent", agent, "grpc-tls-client-ca", "floe-grpc-tls", "ca.crt"},
		{"agent", agent, "kafka-tls-cert", "floe-kafka-tls", "tls.crt"},
		{"agent", agent, "kafka-tls-key", "floe-kafka-tls", "tls.key"},
		{"agent", agent, "kafka-tls-client-ca", "floe-kafka-tls", "ca.crt"},
		{"agent", agent, "http-tls-cert", "floe-http-tls", "tls.crt"},
		{"agent", agent, "http-tls-key", "floe-http-tls", "tls.key"},
		{"agent", agent, "s3-ca-file", "floe-s3-ca", "bundle.pem"},
		{"compactor", comp, "http-tls-cert", "floe-http-tls", "tls.crt"},
		{"compactor", comp, "http-tls-key", "floe-http-tls", "tls.key"},
		{"compactor", comp, "s3-ca-file", "floe-s3-ca", "bundle.pem"},
	} {
		c := &tc.pod.Containers[0]
		path := flagValue(c, tc.flag)
		if path == "" {
			t.Errorf("%s: no -%s", tc.name, tc.flag)
			continue
		}
		if s, k := secretOfPath(t, tc.pod, c, path); s != tc.secret || k != tc.key {
			t.Errorf("%s -%s=%s: Secret %s key %s, want %s key %s", tc.name, tc.flag, path, s, k, tc.secret, tc.key)
		}
	}
	// PostgreSQL's CA is mounted where its URL names it (docs/security.md).
	for _, pod := range []corev1.PodSpec{agent, comp} {
		if s, _ := secretOfPath(t, pod, &pod.Containers[0], "/etc/floe/tls/postgres/ca.crt"); s != "floe-pg-ca" {
			t.Errorf("%s: PostgreSQL CA from %q, want floe-pg-ca", pod.Containers[0].Name, s)
		}
		if g := pod.SecurityContext.FSGroup; g == nil || *g != *pod.SecurityContext.RunAsUser {
			t.Errorf("%s: fsGroup %v: the TLS keys (0440) would be unreadable", pod.Containers[0].Name, g)
		}
	}
	if hasFlag(&comp.Containers[0], "grpc-tls-cert") || hasFlag(&comp.Containers[0], "kafka-tls-cert") {
		t.Error("the compactor has no gRPC or Kafka listener, yet gets their TLS")
	}

	if len(r.podMonitors) != 1 {
		t.Fatalf("%d PodMonitors", len(r.podMonitors))
	}
	ep := r.podMonitors[0].Spec.PodMetricsEndpoints[0]
	if ep.Scheme != "https" || ep.TLSConfig == nil || ep.TLSConfig.CA.Secret.Name != "floe-http-tls" || ep.TLSConfig.CA.Secret.Key != "ca.crt" ||
		ep.TLSConfig.ServerName != "rel-floe-agent-http.streams.svc" {
		t.Errorf("PodMonitor endpoint %+v: want https checked against floe-http-tls's ca.crt", ep)
	}
	tp := r.testPods[0]
	ca := ""
	for _, a := range tp.Spec.Containers[0].Command {
		if v, ok := strings.CutPrefix(a, "-ca="); ok {
			ca = v
		}
	}
	if ca == "" {
		t.Fatalf("helm test %v: no -ca for the HTTPS listener", tp.Spec.Containers[0].Command)
	}
	if s, k := secretOfPath(t, tp.Spec, &tp.Spec.Containers[0], ca); s != "floe-http-tls" || k != "ca.crt" {
		t.Errorf("helm test -ca=%s: Secret %s key %s", ca, s, k)
	}

	// Off by default; TLS without mutual TLS has no client CA.
	plain := render(t, baseArgs...)
	for _, a := range plain.deployments["rel-floe-agent"].Spec.Template.Spec.Containers[0].Args {
		if strings.Contains(a, "tls") || strings.Contains(a, "ca-file") {
			t.Errorf("default values render %s", a)
		}
	}
	one := render(t, append(baseArgs, "--set", "tls.grpc.existingSecret=g")...)
	oc := &one.deployments["rel-floe-agent"].Spec.Template.Spec.Containers[0]
	if !hasFlag(oc, "grpc-tls-cert") || hasFlag(oc, "grpc-tls-client-ca") || hasFlag(oc, "http-tls-cert") {
		t.Errorf("tls.grpc alone: args %v", oc.Args)
	}
	if _, err := helmTemplate(t, append(baseArgs, "--set", "tls.kafka.clientAuth=true")...); err == nil ||
		!strings.Contains(err.Error(), "tls.kafka.clientAuth needs tls.kafka.existingSecret") {
		t.Errorf("clientAuth without a Secret: %v", err)
	}
	if _, err := helmTemplate(t, append(baseArgs, "--set", "agent.extraArgs={-grpc-tls-cert=/x}")...); err == nil {
		t.Error("a TLS flag through agent.extraArgs accepted")
	}
}
