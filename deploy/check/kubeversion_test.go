package check

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"strconv"

	"testing"
)

// kubeFloor is the sentence of docs/deploy.md naming the oldest Kubernetes
// the chart supports.
var kubeFloor = regexp.MustCompile(`Kubernetes 1\.([0-9]+) or later`)

// kubeFloorMinor returns the minor version of that floor.
func kubeFloorMinor(t *testing.T) int {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := kubeFloor.FindSubmatch(doc)
	if m == nil {
		t.Fatal(`docs/deploy.md names no "Kubernetes 1.N or later"`)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// fieldPaths returns the paths of every field of a manifest, lists
// written [], the pod template and a Pod's spec both as "pod.", e.g.
// "Deployment pod.containers[].startupProbe.httpGet.path". Maps of free
// keys (labels, annotations, selectors' matchLabels, resources, data) end
// the path.
func fieldPaths(m map[string]any) []string {
	kind, _ := m["kind"].(string)
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				p := prefix + "." + k
				if prefix == "" {
					p = k
				}
				if kind == "Deployment" && p == "spec.template.spec" || kind == "Pod" && p == "spec" {
					p = "pod"
				}
				out = append(out, p)
				if freeKeys[k] {
					continue
				}
				walk(p, e)
			}
		case []any:
			for _, e := range x {
				walk(prefix+"[]", e)
			}
		}
	}
	walk("", m)
	for i, p := range out {
		out[i] = kind + " " + p
	}
	return out
}

var freeKeys = map[string]bool{"labels": true, "annotations": true, "matchLabels": true, "limits": true, "requests": true,
	"stringData": true, "data": true, "nodeSelector": true}

// apiSince is the Kubernetes minor version from which each API version
// and kind the chart may render is served (GA). A kind rendered that is
// not listed fails the check: add it with its version. prometheus-operator's
// kinds are CRDs, outside the version floor (rendered only when asked).
var apiSince = map[string]int{
	"v1 Secret": 0, "v1 Service": 0, "v1 ServiceAccount": 0, "v1 Pod": 0,
	"apps/v1 Deployment":                     9,
	"networking.k8s.io/v1 NetworkPolicy":     7,
	"policy/v1 PodDisruptionBudget":          21,
	"autoscaling/v2 HorizontalPodAutoscaler": 23,
	"monitoring.coreos.com/v1 PodMonitor":    -1,
}

// fieldSince is the Kubernetes minor version from which a field of those
// kinds works on a default cluster (GA, or beta enabled by default), for
// the fields added after the newest API version above (1.23); older fields
// work on every version the API versions allow. 99: behind a feature gate
// off by default in every released version.
var fieldSince = map[string]int{
	"pod.os":                                                       25,
	"pod.ephemeralContainers":                                      25,
	"pod.hostUsers":                                                99,
	"pod.schedulingGates":                                          27,
	"pod.resourceClaims":                                           99,
	"pod.resources":                                                99,
	"pod.securityContext.appArmorProfile":                          30,
	"pod.securityContext.seLinuxChangePolicy":                      99,
	"pod.securityContext.supplementalGroupsPolicy":                 33,
	"pod.containers[].securityContext.appArmorProfile":             30,
	"pod.topologySpreadConstraints[].minDomains":                   30,
	"pod.topologySpreadConstraints[].matchLabelKeys":               27,
	"pod.topologySpreadConstraints[].nodeAffinityPolicy":           26,
	"pod.topologySpreadConstraints[].nodeTaintsPolicy":             26,
	"pod.containers[].lifecycle.preStop.sleep":                     30,
	"pod.containers[].lifecycle.postStart.sleep":                   30,
	"pod.containers[].lifecycle.stopSignal":                        99,
	"pod.containers[].resizePolicy":                                33,
	"pod.initContainers[].restartPolicy":                           29,
	"pod.containers[].startupProbe.grpc":                           24,
	"pod.containers[].livenessProbe.grpc":                          24,
	"pod.containers[].readinessProbe.grpc":                         24,
	"pod.containers[].livenessProbe.terminationGracePeriodSeconds": 25,
	"pod.containers[].startupProbe.terminationGracePeriodSeconds":  25,
	"pod.volumes[].image":                                          99,
	"pod.containers[].env[].valueFrom.fileKeyRef":                  99,
	"PodDisruptionBudget spec.unhealthyPodEvictionPolicy":          27,
	"Service spec.trafficDistribution":                             31,
	"Service spec.internalTrafficPolicy":                           22,
	"Service spec.loadBalancerClass":                               24,
	"Service spec.allocateLoadBalancerNodePorts":                   24,
	"NetworkPolicy spec.ingress[].ports[].endPort":                 25,
	"NetworkPolicy spec.egress[].ports[].endPort":                  25,
}

// needsMinor returns the Kubernetes minor version a manifest needs and the
// fields (or kind) that need it; an unknown kind is an error.
func needsMinor(m map[string]any) (int, []string, error) {
	kind := fmt.Sprintf("%v %v", m["apiVersion"], m["kind"])
	need, ok := apiSince[kind]
	if !ok {
		return 0, nil, fmt.Errorf("%s is not in apiSince: add it with the Kubernetes version that serves it", kind)
	}
	if need < 0 {
		return 0, nil, nil
	}
	why := []string{kind}
	for _, p := range fieldPaths(m) {
		k, path, _ := strings.Cut(p, " ")
		v, ok := fieldSince[path]
		if !ok {
			v, ok = fieldSince[k+" "+path]
		}
		switch {
		case !ok || v < need:
		case v == need:
			why = append(why, p)
		default:
			need, why = v, []string{p}
		}
	}
	return need, why, nil
}

// TestHelmChartKubernetesFloor: the floor docs/deploy.md states is the
// newest version any field of any rendering needs (the default install,
// the test values, the documented examples): not below (a field would be
// dropped or refused), not above (clusters refused for nothing).
func TestHelmChartKubernetesFloor(t *testing.T) {
	floor := kubeFloorMinor(t)
	renders := map[string]rendered{"default": render(t, baseArgs...)}
	for _, f := range testValues {
		renders[f] = render(t, "-f", filepath.Join("testdata", f))
	}
	for name, args := range documentedRenders(t) {
		renders[name] = renderAs(t, "floe", args...)
	}
	max, maxWhy := 0, []string(nil)
	for name, r := range renders {
		for _, m := range r.manifests {
			need, why, err := needsMinor(m)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			if need > floor {
				t.Errorf("%s: %v need Kubernetes 1.%d, above the floor 1.%d of docs/deploy.md", name, why, need, floor)
			}
			if need > max {
				max, maxWhy = need, why
			}
		}
	}
	if max < floor {
		t.Errorf("docs/deploy.md states Kubernetes 1.%d or later, but the chart needs only 1.%d (%v)", floor, max, maxWhy)
	}
	t.Logf("floor 1.%d, set by %v", max, maxWhy)
}

// TestKubernetesFloorSeesNewFields: the floor check is not blind: a preStop
// sleep action (the chart's earlier hook) needs 1.30, and an unknown kind
// is refused.
func TestKubernetesFloorSeesNewFields(t *testing.T) {
	dep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "spec": map[string]any{"template": map[string]any{
		"spec": map[string]any{"containers": []any{map[string]any{"name": "a",
			"lifecycle": map[string]any{"preStop": map[string]any{"sleep": map[string]any{"seconds": 10}}}}}}}}}
	if need, why, err := needsMinor(dep); err != nil || need != 30 || !slices.Contains(why, "Deployment pod.containers[].lifecycle.preStop.sleep") {
		t.Errorf("a preStop sleep needs 1.%d (%v, %v), want 1.30", need, why, err)
	}
	if _, _, err := needsMinor(map[string]any{"apiVersion": "batch/v1", "kind": "CronJob"}); err == nil {
		t.Error("an unknown kind passed")
	}
}
