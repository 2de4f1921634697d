package check

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
)

// agentDrain bounds the agent's own drain after SIGTERM (docs/operations.md:
// up to 5 s for calls in flight, then up to 15 s to flush and commit).
const agentDrain = 20

// strictDecoder decodes YAML manifests into client-go's scheme, refusing
// unknown and duplicate fields and kinds the scheme does not know.
var strictDecoder = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
	json.SerializerOptions{Yaml: true, Strict: true})

func decodeStrict(doc []byte) (runtime.Object, error) {
	obj, _, err := strictDecoder.Decode(doc, nil, nil)
	return obj, err
}

// rendered is a chart rendering, its manifests decoded into their types.
type rendered struct {
	deployments map[string]*appsv1.Deployment // by name
	services    []*corev1.Service
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	pdbs        []*policyv1.PodDisruptionBudget
	secrets     map[string]*corev1.Secret
	accounts    []*corev1.ServiceAccount
}

// helmTemplate runs `helm template` of deploy/helm/floe with the values
// files given, returning its output or the error with helm's stderr.
func helmTemplate(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	chart := filepath.Join(repoRoot(t), "deploy", "helm", "floe")
	cmd := exec.Command(helmBin(t), append([]string{"template", "rel", chart, "--namespace", "streams"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("helm template: %w: %s", err, stderr.String())
	}
	return out, nil
}

// render renders the chart and decodes every manifest strictly.
func render(t *testing.T, args ...string) rendered {
	t.Helper()
	out, err := helmTemplate(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	r := rendered{deployments: map[string]*appsv1.Deployment{}, secrets: map[string]*corev1.Secret{}}
	for i, doc := range bytes.Split(out, []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Fatalf("manifest %d does not decode strictly: %v\n%s", i, err, doc)
		}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			r.deployments[o.Name] = o
		case *corev1.Service:
			r.services = append(r.services, o)
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.hpas = append(r.hpas, o)
		case *policyv1.PodDisruptionBudget:
			r.pdbs = append(r.pdbs, o)
		case *corev1.Secret:
			r.secrets[o.Name] = o
		case *corev1.ServiceAccount:
			r.accounts = append(r.accounts, o)
		default:
			t.Fatalf("manifest %d: unexpected %T", i, obj)
		}
	}
	return r
}

func stripComments(doc []byte) []byte {
	var keep [][]byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			keep = append(keep, l)
		}
	}
	return bytes.Join(keep, []byte("\n"))
}

// TestStrictDecoderRefusesUnknownFields: the decoder the chart checks use
// refuses a misspelt field and an unknown kind (it is not lenient).
func TestStrictDecoderRefusesUnknownFields(t *testing.T) {
	good := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: 1\n"
	if _, err := decodeStrict([]byte(good)); err != nil {
		t.Fatalf("valid Deployment refused: %v", err)
	}
	for _, bad := range []string{
		strings.Replace(good, "replicas", "replica", 1),
		good + "  template:\n    spec:\n      containers: [{name: a, image: b, livenessProbe: {httpGet: {paht: /healthz, port: 1}}}]\n",
		strings.Replace(good, "kind: Deployment", "kind: Deploymnet", 1),
	} {
		if _, err := decodeStrict([]byte(bad)); err == nil {
			t.Errorf("decoded without error:\n%s", bad)
		}
	}
}

// check holds what a rendering must show, given its values.
type check struct {
	image           string
	agentReplicas   int32 // 0: the HPA sets them
	hpa             bool
	pdb             bool
	compactor       int32 // replicas; 0: no compactor
	pathStyle       bool
	pgSecret, pgKey string
	s3Secret        string // "": the AWS chain
	envPresent      []string
	extraAgentArgs  []string
	serviceType     corev1.ServiceType
	serviceAccount  string
}

func TestHelmChartDefaultValues(t *testing.T) {
	r := render(t)
	checkRendering(t, r, check{
		image: "floe:dev", hpa: true, pdb: true, compactor: 1,
		pgSecret: "floe-postgres", pgKey: "url",
		envPresent:     []string{"FLOE_POSTGRES_URL", "FLOE_S3_BUCKET", "AWS_REGION"},
		serviceType:    corev1.ServiceTypeClusterIP,
		serviceAccount: "rel-floe",
	})
	if len(r.secrets) != 0 {
		t.Errorf("default values render Secrets %v; the PostgreSQL URL is an existing Secret's", keys(r.secrets))
	}
}

func TestHelmChartOwnSecretsNoHPA(t *testing.T) {
	r := render(t, "-f", filepath.Join("testdata", "values-own-secrets.yaml"))
	checkRendering(t, r, check{
		image: "registry.example.com/floe:v1.2.3", agentReplicas: 5, pdb: true, compactor: 2, pathStyle: true,
		pgSecret: "rel-floe-postgres", pgKey: "url", s3Secret: "rel-floe-s3",
		envPresent: []string{"FLOE_POSTGRES_URL", "FLOE_S3_BUCKET", "FLOE_S3_PREFIX", "FLOE_S3_ENDPOINT",
			"AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"},
		extraAgentArgs: []string{"-linger=100ms", "-cache-bytes=536870912"},
		serviceType:    corev1.ServiceTypeClusterIP,
		serviceAccount: "floe-runner",
	})
	pg := r.secrets["rel-floe-postgres"]
	if pg == nil || pg.StringData["url"] != "postgres://floe:pw@db.example.com:5432/floe?sslmode=require" {
		t.Errorf("PostgreSQL Secret %+v lacks the URL", pg)
	}
	s3 := r.secrets["rel-floe-s3"]
	if s3 == nil || s3.StringData["AWS_ACCESS_KEY_ID"] != "AKIAEXAMPLE" || s3.StringData["AWS_SECRET_ACCESS_KEY"] != "secret-example" {
		t.Errorf("S3 Secret %+v lacks the keys", s3)
	}
	if pdb := r.pdbs[0]; pdb.Spec.MaxUnavailable.IntValue() != 2 {
		t.Errorf("PDB maxUnavailable %v, want 2", pdb.Spec.MaxUnavailable)
	}
	if len(r.accounts) != 0 {
		t.Errorf("serviceAccount.create=false rendered %d ServiceAccounts", len(r.accounts))
	}
}

func TestHelmChartExistingSecretsHPA(t *testing.T) {
	r := render(t, "-f", filepath.Join("testdata", "values-existing-secrets.yaml"))
	checkRendering(t, r, check{
		image: "floe:dev", hpa: true,
		pgSecret: "pg-credentials", pgKey: "connection-url", s3Secret: "s3-credentials",
		envPresent:     []string{"FLOE_POSTGRES_URL", "FLOE_S3_BUCKET", "AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"},
		serviceType:    corev1.ServiceTypeLoadBalancer,
		serviceAccount: "rel-floe",
	})
	if len(r.secrets) != 0 {
		t.Errorf("existing Secrets given, yet the chart renders %v", keys(r.secrets))
	}
	h := r.hpas[0].Spec
	if *h.MinReplicas != 3 || h.MaxReplicas != 20 || *h.Metrics[0].Resource.Target.AverageUtilization != 60 {
		t.Errorf("HPA %+v, want 3..20 at 60%% CPU", h)
	}
	env := envOf(agentContainer(t, r))
	if ref := env["AWS_ACCESS_KEY_ID"].ValueFrom.SecretKeyRef; ref.Key != "access-key" {
		t.Errorf("AWS_ACCESS_KEY_ID from key %q, want access-key", ref.Key)
	}
	if ref := env["AWS_SECRET_ACCESS_KEY"].ValueFrom.SecretKeyRef; ref.Key != "secret-key" {
		t.Errorf("AWS_SECRET_ACCESS_KEY from key %q, want secret-key", ref.Key)
	}
}

// TestHelmChartRefusesBadValues: values that would break a deployment stop
// the rendering with a message naming the setting.
func TestHelmChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"agent.terminationGracePeriodSeconds=25"}, "terminationGracePeriodSeconds"},
		{[]string{"postgres.existingSecret="}, "postgres.url"},
		{[]string{"s3.bucket="}, "s3.bucket"},
		{[]string{"s3.accessKeyId=AK"}, "s3.secretAccessKey"},
		// values.schema.json: misspelt or ill-typed values are refused.
		{[]string{"agent.replica=3"}, "replica"},
		{[]string{"agent.autoscaling.enabled=maybe"}, "enabled"},
		{[]string{"agent.service.type=Ingress"}, "type"},
	} {
		var args []string
		for _, s := range tc.set {
			args = append(args, "--set", s)
		}
		_, err := helmTemplate(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %v: error %v, want one naming %s", tc.set, err, tc.want)
		}
	}
}

// TestHelmLint: `helm lint --strict` passes with default values.
func TestHelmLint(t *testing.T) {
	chart := filepath.Join(repoRoot(t), "deploy", "helm", "floe")
	out, err := exec.Command(helmBin(t), "lint", "--strict", chart).CombinedOutput()
	if err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
}

func checkRendering(t *testing.T, r rendered, want check) {
	t.Helper()
	agentHelp, agentFlags := usageNames(floeUsage(t, "agent"))
	compHelp, compFlags := usageNames(floeUsage(t, "compactor"))

	agent := r.deployments["rel-floe-agent"]
	if agent == nil {
		t.Fatalf("no agent Deployment among %v", keys(r.deployments))
	}
	c := agentContainer(t, r)
	pod := agent.Spec.Template

	// Selector, replicas, HPA.
	podLabels := labels.Set(pod.Labels)
	sel := labels.SelectorFromSet(agent.Spec.Selector.MatchLabels)
	if !sel.Matches(podLabels) {
		t.Errorf("agent selector %v does not match its pods' labels %v", sel, podLabels)
	}
	switch {
	case want.hpa && agent.Spec.Replicas != nil:
		t.Errorf("agent replicas %d set beside an HPA (they would fight)", *agent.Spec.Replicas)
	case !want.hpa && (agent.Spec.Replicas == nil || *agent.Spec.Replicas != want.agentReplicas):
		t.Errorf("agent replicas %v, want %d", agent.Spec.Replicas, want.agentReplicas)
	}
	if want.hpa {
		if len(r.hpas) != 1 {
			t.Fatalf("%d HPAs, want 1", len(r.hpas))
		}
		h := r.hpas[0].Spec
		if h.ScaleTargetRef.Kind != "Deployment" || h.ScaleTargetRef.Name != agent.Name || h.ScaleTargetRef.APIVersion != "apps/v1" {
			t.Errorf("HPA targets %+v, want the agent Deployment", h.ScaleTargetRef)
		}
		if len(h.Metrics) != 1 || h.Metrics[0].Resource == nil || h.Metrics[0].Resource.Name != corev1.ResourceCPU ||
			h.Metrics[0].Resource.Target.Type != autoscalingv2.UtilizationMetricType {
			t.Errorf("HPA metrics %+v, want CPU utilisation", h.Metrics)
		}
		if _, ok := c.Resources.Requests[corev1.ResourceCPU]; !ok {
			t.Error("agent has no CPU request: an HPA on CPU utilisation cannot work")
		}
	} else if len(r.hpas) != 0 {
		t.Errorf("%d HPAs with autoscaling off", len(r.hpas))
	}

	// PDB: selects exactly the agent's pods.
	if want.pdb {
		if len(r.pdbs) != 1 {
			t.Fatalf("%d PDBs, want 1", len(r.pdbs))
		}
		ps, err := metav1Selector(r.pdbs[0].Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		if !ps.Matches(podLabels) {
			t.Errorf("PDB selector %v does not match the agent pods' labels %v", ps, podLabels)
		}
		if !equalMaps(r.pdbs[0].Spec.Selector.MatchLabels, agent.Spec.Selector.MatchLabels) {
			t.Errorf("PDB selector %v, Deployment selector %v", r.pdbs[0].Spec.Selector.MatchLabels, agent.Spec.Selector.MatchLabels)
		}
		if comp := r.deployments["rel-floe-compactor"]; comp != nil && ps.Matches(labels.Set(comp.Spec.Template.Labels)) {
			t.Error("the agent PDB also selects compactor pods")
		}
	} else if len(r.pdbs) != 0 {
		t.Errorf("%d PDBs, want none", len(r.pdbs))
	}

	// Service: selects the agent pods, its gRPC port targets the container's.
	if len(r.services) != 1 {
		t.Fatalf("%d Services, want 1", len(r.services))
	}
	svc := r.services[0]
	if svc.Spec.Type != want.serviceType {
		t.Errorf("Service type %s, want %s", svc.Spec.Type, want.serviceType)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Errorf("Service selector %v does not match agent pods %v", svc.Spec.Selector, podLabels)
	}
	if comp := r.deployments["rel-floe-compactor"]; comp != nil && labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(comp.Spec.Template.Labels)) {
		t.Error("the agent Service also selects compactor pods")
	}
	grpcPort := containerPort(t, c, "grpc")
	var svcGRPC *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Name == "grpc" {
			svcGRPC = &svc.Spec.Ports[i]
		}
	}
	if svcGRPC == nil || resolvePort(t, c, svcGRPC.TargetPort) != grpcPort || svcGRPC.Port != grpcPort {
		t.Errorf("Service gRPC port %+v does not target the agent's gRPC port %d", svcGRPC, grpcPort)
	}
	if !slices.Contains(c.Args, fmt.Sprintf("-listen=:%d", grpcPort)) {
		t.Errorf("agent args %v do not listen on the gRPC container port %d", c.Args, grpcPort)
	}

	// Probes on the HTTP (metrics) port.
	httpPort := containerPort(t, c, "http")
	if !slices.Contains(c.Args, fmt.Sprintf("-metrics-listen=:%d", httpPort)) {
		t.Errorf("agent args %v do not serve HTTP on the container port %d", c.Args, httpPort)
	}
	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || resolvePort(t, c, p.HTTPGet.Port) != httpPort {
			t.Errorf("probe %s: %+v, want GET %s on port %d", name, p, name, httpPort)
		}
	}

	// Drain: preStop sleep, then SIGTERM and the agent's drain, all within
	// the grace period.
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds <= 0 {
		t.Fatalf("agent has no preStop sleep: %+v", c.Lifecycle)
	}
	grace := pod.Spec.TerminationGracePeriodSeconds
	if sleep := c.Lifecycle.PreStop.Sleep.Seconds; grace == nil || *grace <= sleep+agentDrain {
		t.Errorf("terminationGracePeriodSeconds %v not above preStop %d s + drain %d s", grace, sleep, agentDrain)
	}
	if s := agent.Spec.Strategy.RollingUpdate; s == nil || s.MaxUnavailable == nil || s.MaxUnavailable.IntValue() != 0 {
		t.Errorf("agent rolling update %+v: want maxUnavailable 0 (a new pod is ready before an old one drains)", s)
	}

	if pod.Spec.ServiceAccountName != want.serviceAccount {
		t.Errorf("service account %q, want %q", pod.Spec.ServiceAccountName, want.serviceAccount)
	}

	// The agent's command line and environment are floe's.
	if c.Image != want.image {
		t.Errorf("agent image %s, want %s", c.Image, want.image)
	}
	checkCommand(t, "agent", c, agentHelp, agentFlags)
	for _, a := range want.extraAgentArgs {
		if !slices.Contains(c.Args, a) {
			t.Errorf("agent args %v lack %s", c.Args, a)
		}
	}
	checkEnv(t, r, c, want)
	checkSecurity(t, pod.Spec, c)

	// Compactor.
	comp := r.deployments["rel-floe-compactor"]
	if want.compactor == 0 {
		if comp != nil {
			t.Error("compactor rendered while disabled")
		}
		return
	}
	if comp == nil {
		t.Fatal("no compactor Deployment")
	}
	if comp.Spec.Replicas == nil || *comp.Spec.Replicas != want.compactor {
		t.Errorf("compactor replicas %v, want %d", comp.Spec.Replicas, want.compactor)
	}
	if !labels.SelectorFromSet(comp.Spec.Selector.MatchLabels).Matches(labels.Set(comp.Spec.Template.Labels)) {
		t.Error("compactor selector does not match its pods")
	}
	if labels.SelectorFromSet(comp.Spec.Selector.MatchLabels).Matches(podLabels) ||
		sel.Matches(labels.Set(comp.Spec.Template.Labels)) {
		t.Error("agent and compactor selectors overlap")
	}
	cc := comp.Spec.Template.Spec.Containers[0]
	if cc.Image != want.image {
		t.Errorf("compactor image %s, want %s", cc.Image, want.image)
	}
	checkCommand(t, "compactor", &cc, compHelp, compFlags)
	checkEnv(t, r, &cc, want)
	checkSecurity(t, comp.Spec.Template.Spec, &cc)
	cport := containerPort(t, &cc, "http")
	if p := cc.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" || resolvePort(t, &cc, p.HTTPGet.Port) != cport {
		t.Errorf("compactor liveness %+v, want /healthz on %d", p, cport)
	}
	if !slices.Contains(cc.Args, fmt.Sprintf("-metrics-listen=:%d", cport)) {
		t.Errorf("compactor args %v do not serve HTTP on its container port %d", cc.Args, cport)
	}
}

// checkCommand: args are `floe CMD` followed by flags the command's usage
// lists, path style as asked; every env var is one the usage names.
func checkCommand(t *testing.T, cmd string, c *corev1.Container, env, flags map[string]bool) {
	t.Helper()
	if len(c.Command) != 0 {
		t.Errorf("%s overrides the image's entrypoint: %v", cmd, c.Command)
	}
	if len(c.Args) == 0 || c.Args[0] != cmd {
		t.Fatalf("%s args %v, want %q first", cmd, c.Args, cmd)
	}
	for _, a := range c.Args[1:] {
		if f := flagOf(a); f == "" || !flags[f] {
			t.Errorf("%s arg %q is not a flag of `floe %s -h`", cmd, a, cmd)
		}
	}
	for _, e := range c.Env {
		if !env[e.Name] {
			t.Errorf("%s env %s is not named by `floe %s -h` (it names %v)", cmd, e.Name, cmd, keys(env))
		}
	}
}

func checkEnv(t *testing.T, r rendered, c *corev1.Container, want check) {
	t.Helper()
	env := envOf(c)
	var names []string
	for n := range env {
		names = append(names, n)
	}
	for _, n := range want.envPresent {
		if _, ok := env[n]; !ok {
			t.Errorf("%s lacks env %s (has %v)", c.Name, n, names)
		}
	}
	if want.s3Secret == "" {
		for _, n := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
			if _, ok := env[n]; ok {
				t.Errorf("%s sets %s without S3 credentials configured (the AWS chain should apply)", c.Name, n)
			}
		}
	}
	pg := env["FLOE_POSTGRES_URL"]
	if pg.Value != "" || pg.ValueFrom == nil || pg.ValueFrom.SecretKeyRef == nil ||
		pg.ValueFrom.SecretKeyRef.Name != want.pgSecret || pg.ValueFrom.SecretKeyRef.Key != want.pgKey {
		t.Errorf("%s FLOE_POSTGRES_URL %+v, want Secret %s key %s", c.Name, pg, want.pgSecret, want.pgKey)
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			if strings.Contains(e.Name, "SECRET") || strings.Contains(e.Name, "POSTGRES_URL") {
				t.Errorf("%s %s is a plain value, not from a Secret", c.Name, e.Name)
			}
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if s, ok := r.secrets[ref.Name]; ok {
			if _, ok := s.StringData[ref.Key]; !ok {
				t.Errorf("%s %s refers to key %s absent from the chart's Secret %s", c.Name, e.Name, ref.Key, ref.Name)
			}
		} else if ref.Name != want.pgSecret && ref.Name != want.s3Secret {
			t.Errorf("%s %s refers to Secret %s, neither rendered nor configured", c.Name, e.Name, ref.Name)
		}
	}
	if got := slices.Contains(c.Args, "-s3-path-style"); got != want.pathStyle {
		t.Errorf("%s -s3-path-style %v, want %v", c.Name, got, want.pathStyle)
	}
}

func checkSecurity(t *testing.T, pod corev1.PodSpec, c *corev1.Container) {
	t.Helper()
	ps := pod.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser == 0 {
		t.Errorf("%s pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", c.Name, ps)
	}
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("%s securityContext %+v: want a read-only root, no privilege escalation, all capabilities dropped", c.Name, sc)
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		t.Errorf("%s has no memory limit", c.Name)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("%s mounts a service account token it never uses", c.Name)
	}
}

func agentContainer(t *testing.T, r rendered) *corev1.Container {
	t.Helper()
	d := r.deployments["rel-floe-agent"]
	if d == nil || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("agent Deployment %v: want one container", d)
	}
	return &d.Spec.Template.Spec.Containers[0]
}

func envOf(c *corev1.Container) map[string]corev1.EnvVar {
	m := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		m[e.Name] = e
	}
	return m
}

func containerPort(t *testing.T, c *corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("%s has no port named %s", c.Name, name)
	return 0
}

// resolvePort resolves a named or numbered port of container c.
func resolvePort(t *testing.T, c *corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.Int {
		return p.IntVal
	}
	return containerPort(t, c, p.StrVal)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func metav1Selector(s *metav1.LabelSelector) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(s)
}
