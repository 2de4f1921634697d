package check

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// envValue is the value of name in c's environment, and whether it is set.
func envValue(c *corev1.Container, name string) (string, bool) {
	e, ok := envOf(c)[name] // chart_checks_test.go
	return e.Value, ok
}

// TestHelmChartAuth: the chart turns authentication on by default
// (superusers, metrics left open for the PodMonitor), the probes and the
// helm test pod ask only /healthz and /readyz (always open), auth.enabled
// false turns it off, and a PodMonitor on closed metrics needs a token
// Secret (refused without one).
func TestHelmChartAuth(t *testing.T) {
	r := render(t, baseArgs...)
	for _, name := range []string{"rel-floe-agent", "rel-floe-compactor"} {
		c := &r.deployments[name].Spec.Template.Spec.Containers[0]
		for env, want := range map[string]string{"FLOE_AUTH_ENABLED": "true", "FLOE_AUTH_SUPERUSERS": "User:admin",
			"FLOE_AUTH_HTTP_OPEN": "metrics", "FLOE_AUTH_CERT_PRINCIPAL": "cn"} {
			if got, _ := envValue(c, env); got != want {
				t.Errorf("%s: %s=%q, want %q", name, env, got, want)
			}
		}
		for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
			if p == nil || p.HTTPGet == nil {
				continue
			}
			if path := p.HTTPGet.Path; path != "/healthz" && path != "/readyz" {
				t.Errorf("%s: a probe asks %s, which auth closes", name, path)
			}
		}
	}
	for _, p := range r.testPods {
		if cmd := strings.Join(p.Spec.Containers[0].Command, " "); !strings.HasSuffix(cmd, "/readyz") {
			t.Errorf("helm test pod %s runs %q: want it to ask /readyz, open under auth", p.Name, cmd)
		}
	}

	off := render(t, append(slices.Clone(baseArgs), "--set", "auth.enabled=false")...)
	c := &off.deployments["rel-floe-agent"].Spec.Template.Spec.Containers[0]
	if v, _ := envValue(c, "FLOE_AUTH_ENABLED"); v != "false" {
		t.Errorf("auth.enabled=false: FLOE_AUTH_ENABLED=%q", v)
	}
	if _, ok := envValue(c, "FLOE_AUTH_SUPERUSERS"); ok {
		t.Error("auth.enabled=false still sets FLOE_AUTH_SUPERUSERS")
	}

	pm := append(slices.Clone(baseArgs), "--set", "monitoring.podMonitor.enabled=true")
	open := render(t, pm...)
	if len(open.podMonitors) != 1 || open.podMonitors[0].Spec.PodMetricsEndpoints[0].BearerTokenSecret != nil {
		t.Errorf("metrics open: PodMonitor %+v, want one without a token", open.podMonitors)
	}
	closed := append(pm, "--set", "auth.httpOpen=null")
	if out, err := helmTemplateAs(t, "rel", closed...); err == nil || !strings.Contains(string(out)+err.Error(), "auth.metricsTokenSecret") {
		t.Errorf("closed metrics without a token Secret rendered: %v\n%s", err, out)
	}
	tok := render(t, append(closed, "--set", "auth.metricsTokenSecret.name=floe-metrics-token")...)
	if b := tok.podMonitors[0].Spec.PodMetricsEndpoints[0].BearerTokenSecret; b == nil || b.Name != "floe-metrics-token" || b.Key != "token" {
		t.Errorf("closed metrics with a token Secret: bearerTokenSecret %+v", b)
	}
	for _, bad := range [][]string{{"--set", "auth.httpOpen={nope}"}, {"--set", "auth.superusers={admin}"}, {"--set", "auth.certPrincipal=subject"}} {
		if _, err := helmTemplateAs(t, "rel", append(slices.Clone(baseArgs), bad...)...); err == nil {
			t.Errorf("%v rendered", bad)
		}
	}
}
