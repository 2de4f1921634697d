package check

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// checkNetworkPolicies: when on, each component's pods are selected by a
// policy whose every rule names its peers (none allows all) and covers a
// container port; the agents' gRPC and HTTP ports and the compactor's HTTP
// port are reachable from someone.
func checkNetworkPolicies(t *testing.T, r rendered, on bool) {
	t.Helper()
	if !on {
		if len(r.policies) != 0 {
			t.Errorf("NetworkPolicies %v rendered while off", keys(r.policies))
		}
		return
	}
	for name, d := range r.deployments {
		var np *networkingv1.NetworkPolicy
		for _, p := range r.policies {
			if sel, err := metav1Selector(&p.Spec.PodSelector); err == nil && sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				np = p
			}
		}
		if np == nil {
			t.Errorf("no NetworkPolicy selects the pods of %s", name)
			continue
		}
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
			t.Errorf("NetworkPolicy %s does not restrict ingress", np.Name)
		}
		c := d.Spec.Template.Spec.Containers[0]
		open := map[int32]bool{}
		for _, rule := range np.Spec.Ingress {
			if len(rule.From) == 0 {
				t.Errorf("NetworkPolicy %s has a rule open to all: %+v", np.Name, rule)
			}
			for _, p := range rule.Ports {
				port := resolvePort(t, &c, *p.Port)
				if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.ContainerPort == port }) {
					t.Errorf("NetworkPolicy %s opens port %d, not one of %s", np.Name, port, name)
				}
				open[port] = true
			}
		}
		for _, cp := range c.Ports {
			if !open[cp.ContainerPort] {
				t.Errorf("NetworkPolicy %s lets nobody reach %s port %s", np.Name, name, cp.Name)
			}
		}
	}
}

// checkHelmTest: one helm test pod runs floe-probe against the agents'
// HTTP Service /readyz, and the agents' NetworkPolicy lets it in.
func checkHelmTest(t *testing.T, r rendered, image string) {
	t.Helper()
	if len(r.testPods) != 1 {
		t.Fatalf("%d helm test pods, want 1", len(r.testPods))
	}
	p := r.testPods[0]
	c := p.Spec.Containers[0]
	svc := r.services[r.full+"-agent-http"]
	if svc == nil {
		return
	}
	scheme := "http"
	if agent := r.deployments[r.full+"-agent"]; agent != nil && hasFlag(&agent.Spec.Template.Spec.Containers[0], "http-tls-cert") {
		scheme = "https" // and the CA of the certificate: checkTLSHelmTest
	}
	want := fmt.Sprintf("%s://%s.streams.svc:%d/readyz", scheme, svc.Name, svc.Spec.Ports[0].Port)
	if c.Image != image || len(c.Command) == 0 || !strings.HasSuffix(c.Command[0], "/floe-probe") || !slices.Contains(c.Command, want) {
		t.Errorf("helm test %s runs %s %v, want floe-probe of %s asking %s", p.Name, c.Image, c.Command, image, want)
	}
	if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("helm test restartPolicy %s, want Never", p.Spec.RestartPolicy)
	}
	np := r.policies[r.full+"-agent"]
	if np == nil {
		return
	}
	for _, rule := range np.Spec.Ingress {
		for _, port := range rule.Ports {
			if port.Port.IntValue() != int(svc.Spec.Ports[0].Port) {
				continue
			}
			for _, peer := range rule.From {
				if peer.PodSelector != nil && peer.NamespaceSelector == nil {
					if sel, err := metav1Selector(peer.PodSelector); err == nil && sel.Matches(labels.Set(p.Labels)) {
						return
					}
				}
			}
		}
	}
	t.Errorf("the agents' NetworkPolicy does not let the helm test pod %v reach the HTTP port", p.Labels)
}

// checkPodMonitors: a PodMonitor selects the agent and compactor pods and
// scrapes /metrics on their port named http.
func checkPodMonitors(t *testing.T, r rendered) {
	t.Helper()
	for _, pm := range r.podMonitors {
		sel := pm.Spec.RawSelector.selector(t)
		for name, d := range r.deployments {
			if !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				t.Errorf("PodMonitor %s does not select %s", pm.Metadata.Name, name)
			}
			if !slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" }) {
				t.Errorf("%s has no port named http for the PodMonitor", name)
			}
		}
		if len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port != "http" || pm.Spec.PodMetricsEndpoints[0].Path != "/metrics" {
			t.Errorf("PodMonitor endpoints %+v, want /metrics on http", pm.Spec.PodMetricsEndpoints)
		}
	}
}
