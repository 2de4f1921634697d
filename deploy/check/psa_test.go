package check

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// restricted evaluates a pod against the restricted Pod Security Standard
// at the latest version and at the chart's Kubernetes floor, returning the
// reasons of every failed check.
func restricted(t *testing.T, meta metav1.ObjectMeta, spec corev1.PodSpec) []string {
	t.Helper()
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, v := range []psaapi.Version{psaapi.LatestVersion(), psaapi.MajorMinorVersion(1, kubeFloorMinor(t))} {
		for _, r := range eval.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: v}, &meta, &spec) {
			if !r.Allowed {
				failed = append(failed, v.String()+": "+r.ForbiddenReason+": "+r.ForbiddenDetail)
			}
		}
	}
	return failed
}

// checkPodSecurity: every workload of a rendering (the Deployments' pod
// templates, the helm test pod) passes the restricted profile, as the Pod
// Security admission of a namespace labelled
// pod-security.kubernetes.io/enforce=restricted would judge it.
func checkPodSecurity(t *testing.T, r rendered) {
	t.Helper()
	for name, d := range r.deployments {
		if failed := restricted(t, d.Spec.Template.ObjectMeta, d.Spec.Template.Spec); len(failed) != 0 {
			t.Errorf("Deployment %s fails the restricted Pod Security profile: %v", name, failed)
		}
	}
	for _, p := range r.testPods {
		if failed := restricted(t, p.ObjectMeta, p.Spec); len(failed) != 0 {
			t.Errorf("Pod %s fails the restricted Pod Security profile: %v", p.Name, failed)
		}
	}
}

// TestPodSecurityCheckRefuses: the restricted evaluation above is not
// lenient: a chart pod with its security contexts taken away, or one
// running as root with a host path, fails it.
func TestPodSecurityCheckRefuses(t *testing.T) {
	r := render(t, baseArgs...)
	good := r.deployments["rel-floe-agent"].Spec.Template
	if failed := restricted(t, good.ObjectMeta, good.Spec); len(failed) != 0 {
		t.Fatalf("the agent pod fails: %v", failed)
	}
	bare := *good.Spec.DeepCopy()
	bare.SecurityContext = nil
	bare.Containers[0].SecurityContext = nil
	root := *good.Spec.DeepCopy()
	root.SecurityContext.RunAsNonRoot = nil
	zero := int64(0)
	root.SecurityContext.RunAsUser = &zero
	root.Volumes = append(root.Volumes, corev1.Volume{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
	for name, spec := range map[string]corev1.PodSpec{"without security contexts": bare, "root with a host path": root} {
		if failed := restricted(t, good.ObjectMeta, spec); len(failed) == 0 {
			t.Errorf("a pod %s passes the restricted profile", name)
		}
	}
}
