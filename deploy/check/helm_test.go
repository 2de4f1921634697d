package check

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
)

// After -drain-timeout (the flush and commit of what producers handed in)
// the agent gives the answers 2 s to go out (docs/operations.md).
const agentAnswerSeconds = 2

// agentHeadroom is the room the agent's soft memory limit keeps beyond its
// buffers and cache (cmd/floe/server.go; docs/operations.md says it).
const agentHeadroom = 192 << 20

// baseArgs are the two values an install must give (docs/deploy.md): the
// image's repository and the PostgreSQL URL's Secret.
var baseArgs = []string{"--set", "image.repository=registry.example.com/floe", "--set", "postgres.existingSecret=floe-db"}

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
	services    map[string]*corev1.Service
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	pdbs        []*policyv1.PodDisruptionBudget
	secrets     map[string]*corev1.Secret
	accounts    []*corev1.ServiceAccount
	policies    map[string]*networkingv1.NetworkPolicy
	testPods    []*corev1.Pod // helm test hooks
	podMonitors []podMonitor
	full        string           // the release's full name: RELEASE-floe, or the release's if it holds floe
	manifests   []map[string]any // every manifest, for the version floor
	names       []string         // kind/name of every manifest, in order
}

// podMonitor is the part of prometheus-operator's PodMonitor the chart
// writes (not in client-go's scheme: decoded strictly on its own).
type podMonitor struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		RawSelector         rawSelector `yaml:"selector"`
		PodMetricsEndpoints []struct {
			Port     string `yaml:"port"`
			Path     string `yaml:"path"`
			Interval string `yaml:"interval"`
		} `yaml:"podMetricsEndpoints"`
	} `yaml:"spec"`
}

type rawSelector struct {
	MatchLabels      map[string]string `yaml:"matchLabels"`
	MatchExpressions []struct {
		Key      string   `yaml:"key"`
		Operator string   `yaml:"operator"`
		Values   []string `yaml:"values"`
	} `yaml:"matchExpressions"`
}

func (r rawSelector) selector(t *testing.T) labels.Selector {
	t.Helper()
	ls := &metav1.LabelSelector{MatchLabels: r.MatchLabels}
	for _, e := range r.MatchExpressions {
		ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator), Values: e.Values})
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		t.Fatalf("PodMonitor selector: %v", err)
	}
	return sel
}

// helmTemplate runs `helm template` of deploy/helm/floe with the values
// files given, returning its output or the error with helm's stderr.
func helmTemplate(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	return helmTemplateAs(t, "rel", args...)
}

// helmTemplateAs is helmTemplate of a release named release.
func helmTemplateAs(t *testing.T, release string, args ...string) ([]byte, error) {
	t.Helper()
	chart := filepath.Join(repoRoot(t), "deploy", "helm", "floe")
	cmd := exec.Command(helmBin(t), append([]string{"template", release, chart, "--namespace", "streams"}, args...)...)
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
	return renderAs(t, "rel", args...)
}

// renderAs is render of a release named release.
func renderAs(t *testing.T, release string, args ...string) rendered {
	t.Helper()
	out, err := helmTemplateAs(t, release, args...)
	if err != nil {
		t.Fatal(err)
	}
	r := rendered{deployments: map[string]*appsv1.Deployment{}, secrets: map[string]*corev1.Secret{},
		services: map[string]*corev1.Service{}, policies: map[string]*networkingv1.NetworkPolicy{}, full: release + "-floe"}
	if strings.Contains(release, "floe") {
		r.full = release
	}
	for i, doc := range bytes.Split(out, []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		var generic map[string]any
		if err := yaml.Unmarshal(doc, &generic); err != nil {
			t.Fatalf("manifest %d is not YAML: %v\n%s", i, err, doc)
		}
		r.manifests = append(r.manifests, generic)
		meta, _ := generic["metadata"].(map[string]any)
		r.names = append(r.names, fmt.Sprintf("%v/%v", generic["kind"], meta["name"]))
		if generic["apiVersion"] == "monitoring.coreos.com/v1" && generic["kind"] == "PodMonitor" {
			var pm podMonitor
			dec := yaml.NewDecoder(bytes.NewReader(doc))
			dec.KnownFields(true)
			if err := dec.Decode(&pm); err != nil {
				t.Fatalf("PodMonitor does not decode strictly: %v\n%s", err, doc)
			}
			r.podMonitors = append(r.podMonitors, pm)
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
			r.services[o.Name] = o
		case *networkingv1.NetworkPolicy:
			r.policies[o.Name] = o
		case *corev1.Pod:
			if o.Annotations["helm.sh/hook"] != "test" {
				t.Fatalf("manifest %d: a bare Pod %s that is no helm test", i, o.Name)
			}
			r.testPods = append(r.testPods, o)
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
	networkPolicy   bool
	compactor       int32 // replicas; 0: no compactor
	pathStyle       bool
	pgSecret, pgKey string
	s3Secret        string // "": the AWS chain
	envPresent      []string
	extraAgentArgs  []string
	serviceType     corev1.ServiceType
	serviceAccount  string
}

// chartAppVersion is the appVersion of deploy/helm/floe/Chart.yaml.
func chartAppVersion(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "helm", "floe", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `yaml:"appVersion"`
	}
	if err := yaml.Unmarshal(text, &c); err != nil {
		t.Fatal(err)
	}
	return c.AppVersion
}

var releaseTag = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+$`)

// TestHelmChartDefaultValues: the two required values and nothing else
// (the image repository, the PostgreSQL Secret) give the whole install:
// the image at the chart's appVersion, a release tag (not dev or latest).
func TestHelmChartDefaultValues(t *testing.T) {
	app := chartAppVersion(t)
	if !releaseTag.MatchString(app) {
		t.Errorf("Chart.yaml appVersion %q is not a release tag (X.Y.Z): the default image would be one nobody publishes", app)
	}
	r := render(t, baseArgs...)
	checkRendering(t, r, check{
		image: "registry.example.com/floe:" + app, hpa: true, pdb: true, networkPolicy: true, compactor: 1,
		pgSecret: "floe-db", pgKey: "url",
		envPresent:     []string{"FLOE_POSTGRES_URL", "FLOE_S3_BUCKET", "AWS_REGION", "GOMEMLIMIT", "GOMAXPROCS"},
		serviceType:    corev1.ServiceTypeClusterIP,
		serviceAccount: "rel-floe",
	})
	if len(r.secrets) != 0 {
		t.Errorf("default values render Secrets %v; the PostgreSQL URL is an existing Secret's", keys(r.secrets))
	}
	if len(r.podMonitors) != 0 {
		t.Errorf("a PodMonitor by default: its CRD may not be installed")
	}
}

func TestHelmChartOwnSecretsNoHPA(t *testing.T) {
	r := render(t, "-f", filepath.Join("testdata", "values-own-secrets.yaml"))
	checkRendering(t, r, check{
		image: "registry.example.com/floe:v1.2.3", agentReplicas: 5, pdb: true, networkPolicy: true, compactor: 2, pathStyle: true,
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
	if g := r.deployments["rel-floe-agent"].Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != 60 {
		t.Errorf("terminationGracePeriodSeconds %v, want the 60 given", g)
	}
}

func TestHelmChartExistingSecretsHPA(t *testing.T) {
	r := render(t, "-f", filepath.Join("testdata", "values-existing-secrets.yaml"))
	checkRendering(t, r, check{
		image: "registry.example.com/floe:" + chartAppVersion(t), hpa: true,
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

// TestHelmChartEscapeHatches: extraEnv/extraEnvFrom, extra volumes and
// mounts, init containers, pod labels and annotations, priority classes,
// Service labels and annotations, one's own spread constraints, the image
// by digest, a Secret version that rolls the pods, a PodMonitor and
// clients from other namespaces all reach the manifests.
func TestHelmChartEscapeHatches(t *testing.T) {
	r := render(t, "-f", filepath.Join("testdata", "values-escape-hatches.yaml"))
	digest := "registry.example.com/floe@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	checkRendering(t, r, check{
		image: digest, hpa: true, pdb: true, networkPolicy: true, compactor: 1,
		pgSecret: "floe-db", pgKey: "url",
		envPresent:     []string{"FLOE_POSTGRES_URL", "GOMEMLIMIT"},
		serviceType:    corev1.ServiceTypeClusterIP,
		serviceAccount: "rel-floe",
	})
	agent, comp := r.deployments["rel-floe-agent"].Spec.Template, r.deployments["rel-floe-compactor"].Spec.Template
	c := agentContainer(t, r)
	if envOf(c)["FLOE_LOG_FORMAT"].Value != "json" {
		t.Errorf("agent env %v lacks the extra FLOE_LOG_FORMAT", c.Env)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef == nil || c.EnvFrom[0].ConfigMapRef.Name != "floe-settings" {
		t.Errorf("agent envFrom %+v, want the ConfigMap floe-settings", c.EnvFrom)
	}
	if cc := comp.Spec.Containers[0]; len(cc.EnvFrom) != 1 || cc.EnvFrom[0].SecretRef == nil {
		t.Errorf("compactor envFrom %+v, want a Secret", cc.EnvFrom)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "ca" && m.MountPath == "/etc/floe/ca" }) ||
		!slices.ContainsFunc(agent.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "ca" && v.ConfigMap != nil }) {
		t.Errorf("agent volumes %+v / mounts %+v lack the extra ones", agent.Spec.Volumes, c.VolumeMounts)
	}
	if len(agent.Spec.InitContainers) != 1 || agent.Spec.InitContainers[0].Name != "wait" {
		t.Errorf("agent initContainers %+v", agent.Spec.InitContainers)
	}
	if agent.Labels["team"] != "streaming" || comp.Labels["team"] != "streaming" || agent.Annotations["example.com/owner"] != "streaming" {
		t.Errorf("pod labels %v / %v, annotations %v lack the extra ones", agent.Labels, comp.Labels, agent.Annotations)
	}
	if agent.Spec.PriorityClassName != "floe-critical" || comp.Spec.PriorityClassName != "floe-batch" {
		t.Errorf("priority classes %q, %q", agent.Spec.PriorityClassName, comp.Spec.PriorityClassName)
	}
	for _, tmpl := range []corev1.PodTemplateSpec{agent, comp} {
		if tmpl.Annotations["checksum/existing-secrets-version"] != "3" {
			t.Errorf("pod annotations %v: no existing-secrets version (a changed Secret would not roll the pods)", tmpl.Annotations)
		}
	}
	if tsc := agent.Spec.TopologySpreadConstraints; len(tsc) != 1 || tsc[0].MaxSkew != 2 || tsc[0].WhenUnsatisfiable != corev1.DoNotSchedule {
		t.Errorf("agent spread %+v, want the one given instead of the default", tsc)
	}
	if s := r.services["rel-floe-agent"]; s.Labels["exposure"] != "internal" || s.Annotations["example.com/lb"] != "internal" {
		t.Errorf("agent Service labels %v annotations %v", s.Labels, s.Annotations)
	}
	if s := r.services["rel-floe-agent-http"]; s.Labels["scrape"] != "true" {
		t.Errorf("agent HTTP Service labels %v", s.Labels)
	}
	if s := r.services["rel-floe-compactor"]; s.Annotations["example.com/scrape"] != "true" {
		t.Errorf("compactor Service annotations %v", s.Annotations)
	}
	np := r.policies["rel-floe-agent"].Spec
	if peers := np.Ingress[0].From; len(peers) != 1 || peers[0].NamespaceSelector == nil || peers[0].NamespaceSelector.MatchLabels["floe-client"] != "true" {
		t.Errorf("agent gRPC peers %+v, want the namespaces given", peers)
	}
	if !slices.ContainsFunc(np.Ingress[1].From, func(p networkingv1.NetworkPolicyPeer) bool {
		return p.NamespaceSelector != nil && p.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "observability"
	}) {
		t.Errorf("agent HTTP peers %+v lack the monitoring namespace observability", np.Ingress[1].From)
	}
	if len(r.podMonitors) != 1 || r.podMonitors[0].Metadata.Labels["release"] != "prometheus" ||
		r.podMonitors[0].Spec.PodMetricsEndpoints[0].Interval != "15s" {
		t.Errorf("PodMonitors %+v, want one labelled release=prometheus every 15s", r.podMonitors)
	}
}

// TestHelmChartRefusesBadValues: values that would break a deployment stop
// the rendering with a message naming the setting.
func TestHelmChartRefusesBadValues(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		// What a first install without reading would hit.
		{[]string{"postgres.existingSecret=floe-db"}, "image.repository"},
		{[]string{"image.repository=r/floe"}, "postgres.url"},
		{[]string{"agent.resources.limits.memory=512Mi"}, "agent.resources.limits.memory"},
		{[]string{"agent.resources.limits.memory=null"}, "agent.resources.limits.memory"},
		{[]string{"compactor.resources.limits.memory=null"}, "compactor.resources.limits.memory"},
		{[]string{"agent.memory.cacheBytes=1073741824"}, "agent.resources.limits.memory"},
		{[]string{"agent.autoscaling.minReplicas=5", "agent.autoscaling.maxReplicas=3"}, "minReplicas"},
		{[]string{"agent.terminationGracePeriodSeconds=25"}, "terminationGracePeriodSeconds"},
		{[]string{"agent.grpc.maxConnectionAgeGraceSeconds=15"}, "maxConnectionAgeGraceSeconds"},
		{[]string{"agent.extraArgs={-cache-bytes=1}"}, "agent.extraArgs"},
		{[]string{"s3.bucket="}, "s3.bucket"},
		{[]string{"s3.accessKeyId=AK"}, "s3.secretAccessKey"},
		// values.schema.json: misspelt or ill-typed values are refused.
		{[]string{"agent.replica=3"}, "replica"},
		{[]string{"agent.autoscaling.enabled=maybe"}, "enabled"},
		{[]string{"agent.service.type=Ingress"}, "type"},
		{[]string{"image.digest=latest"}, "digest"},
		{[]string{"networkPolicy.clients=null"}, "clients"},
	} {
		args := slices.Clone(baseArgs)
		if tc.want == "image.repository" || tc.want == "postgres.url" {
			args = nil
		}
		for _, s := range tc.set {
			args = append(args, "--set", s)
		}
		_, err := helmTemplate(t, args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--set %v: error %v, want one naming %s", tc.set, err, tc.want)
		}
	}
}

// TestHelmLint: `helm lint --strict` passes with the two required values.
func TestHelmLint(t *testing.T) {
	chart := filepath.Join(repoRoot(t), "deploy", "helm", "floe")
	out, err := exec.Command(helmBin(t), append([]string{"lint", "--strict", chart}, baseArgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
}

func checkRendering(t *testing.T, r rendered, want check) {
	t.Helper()
	agentHelp, agentFlags := usageNames(floeUsage(t, "agent"))
	compHelp, compFlags := usageNames(floeUsage(t, "compactor"))
	checkPodSecurity(t, r)

	agent := r.deployments[r.full+"-agent"]
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
		checkHPA(t, r.hpas[0].Spec, agent, c)
	} else if len(r.hpas) != 0 {
		t.Errorf("%d HPAs with autoscaling off", len(r.hpas))
	}

	// PDB: selects exactly the agent's pods; unhealthy pods may be evicted.
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
		if comp := r.deployments[r.full+"-compactor"]; comp != nil && ps.Matches(labels.Set(comp.Spec.Template.Labels)) {
			t.Error("the agent PDB also selects compactor pods")
		}
		if p := r.pdbs[0].Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
			t.Errorf("PDB unhealthyPodEvictionPolicy %v, want AlwaysAllow (readiness follows shared stores: a blip must not block drains)", p)
		}
	} else if len(r.pdbs) != 0 {
		t.Errorf("%d PDBs, want none", len(r.pdbs))
	}

	// Services: gRPC (of the type asked), headless gRPC, HTTP (ClusterIP).
	comp := r.deployments[r.full+"-compactor"]
	grpcPort, httpPort := containerPort(t, c, "grpc"), containerPort(t, c, "http")
	checkService(t, r, r.full+"-agent", want.serviceType, pod, c, "grpc", comp)
	checkService(t, r, r.full+"-agent-headless", corev1.ServiceTypeClusterIP, pod, c, "grpc", comp)
	if h := r.services[r.full+"-agent-headless"]; h != nil && h.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("headless Service clusterIP %q, want None", h.Spec.ClusterIP)
	}
	checkService(t, r, r.full+"-agent-http", corev1.ServiceTypeClusterIP, pod, c, "http", comp)
	if !slices.Contains(c.Args, fmt.Sprintf("-listen=:%d", grpcPort)) {
		t.Errorf("agent args %v do not listen on the gRPC container port %d", c.Args, grpcPort)
	}
	if !slices.Contains(c.Args, fmt.Sprintf("-metrics-listen=:%d", httpPort)) {
		t.Errorf("agent args %v do not serve HTTP on the container port %d", c.Args, httpPort)
	}
	checkProbes(t, c, true)

	// Drain: preStop sleep (exec: every Kubernetes version runs it), then
	// SIGTERM and the agent's drain, all within the grace period; gRPC
	// connections aged out within the drain.
	sleep := preStopSleep(t, c)
	drain := durationArg(t, c, "drain-timeout")
	grace := pod.Spec.TerminationGracePeriodSeconds
	if grace == nil || *grace <= sleep+drain+agentAnswerSeconds {
		t.Errorf("terminationGracePeriodSeconds %v not above preStop %d s + drain %d s + %d s", grace, sleep, drain, agentAnswerSeconds)
	}
	if age, ageGrace := durationArg(t, c, "grpc-max-connection-age"), durationArg(t, c, "grpc-max-connection-age-grace"); age <= 0 || ageGrace <= 0 || ageGrace >= drain {
		t.Errorf("gRPC max connection age %d s, grace %d s: want both set, the grace below the drain %d s", age, ageGrace, drain)
	}
	if s := agent.Spec.Strategy.RollingUpdate; s == nil || s.MaxUnavailable == nil || s.MaxUnavailable.IntValue() != 0 {
		t.Errorf("agent rolling update %+v: want maxUnavailable 0 (a new pod is ready before an old one drains)", s)
	}
	checkMemory(t, c, true)
	checkSpread(t, pod)

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
	checkNetworkPolicies(t, r, want.networkPolicy)
	checkHelmTest(t, r, want.image)
	checkPodMonitors(t, r)

	// Compactor.
	if want.compactor == 0 {
		if comp != nil {
			t.Error("compactor rendered while disabled")
		}
		if _, ok := r.services[r.full+"-compactor"]; ok {
			t.Error("compactor Service rendered while disabled")
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
	checkProbes(t, &cc, false)
	checkMemory(t, &cc, false)
	checkSpread(t, comp.Spec.Template)
	cport := containerPort(t, &cc, "http")
	if !slices.Contains(cc.Args, fmt.Sprintf("-metrics-listen=:%d", cport)) {
		t.Errorf("compactor args %v do not serve HTTP on its container port %d", cc.Args, cport)
	}
	// Reachable for scraping: a ClusterIP Service on its HTTP port.
	checkService(t, r, r.full+"-compactor", corev1.ServiceTypeClusterIP, comp.Spec.Template, &cc, "http", agent)
}

// checkHPA: the HPA scales the agent Deployment on CPU, which the agent
// requests, up at once and down slowly (a long stabilisation window, at
// most one pod per two minutes or more).
func checkHPA(t *testing.T, h autoscalingv2.HorizontalPodAutoscalerSpec, agent *appsv1.Deployment, c *corev1.Container) {
	t.Helper()
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
	if h.MinReplicas == nil || *h.MinReplicas > h.MaxReplicas {
		t.Errorf("HPA min %v above max %d", h.MinReplicas, h.MaxReplicas)
	}
	down := (*autoscalingv2.HPAScalingRules)(nil)
	if h.Behavior != nil {
		down = h.Behavior.ScaleDown
	}
	if down == nil || down.StabilizationWindowSeconds == nil || *down.StabilizationWindowSeconds < 300 || len(down.Policies) == 0 {
		t.Fatalf("HPA scale-down %+v: want a stabilisation window of 5 minutes or more and policies", down)
	}
	for _, p := range down.Policies {
		if p.Type != autoscalingv2.PodsScalingPolicy || p.Value != 1 || p.PeriodSeconds < 120 {
			t.Errorf("HPA scale-down policy %+v: want one pod per 2 minutes or more", p)
		}
	}
}

// checkService: Service name exists, of type typ, selects the pods of tmpl
// and not those of other, its port named port targets the container's.
func checkService(t *testing.T, r rendered, name string, typ corev1.ServiceType, tmpl corev1.PodTemplateSpec, c *corev1.Container, port string, other *appsv1.Deployment) {
	t.Helper()
	svc := r.services[name]
	if svc == nil {
		t.Errorf("no Service %s among %v", name, keys(r.services))
		return
	}
	if svc.Spec.Type != typ && !(typ == corev1.ServiceTypeClusterIP && svc.Spec.Type == "") {
		t.Errorf("Service %s type %s, want %s", name, svc.Spec.Type, typ)
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	if len(svc.Spec.Selector) == 0 || !sel.Matches(labels.Set(tmpl.Labels)) {
		t.Errorf("Service %s selector %v does not match its pods %v", name, svc.Spec.Selector, tmpl.Labels)
	}
	if other != nil && sel.Matches(labels.Set(other.Spec.Template.Labels)) {
		t.Errorf("Service %s also selects %s pods", name, other.Name)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != port ||
		resolvePort(t, c, svc.Spec.Ports[0].TargetPort) != containerPort(t, c, port) || svc.Spec.Ports[0].Port != containerPort(t, c, port) {
		t.Errorf("Service %s ports %+v: want only %s, on the container's port %d", name, svc.Spec.Ports, port, containerPort(t, c, port))
	}
}

// checkProbes: a startup probe, liveness /healthz and readiness /readyz,
// all on the HTTP port.
func checkProbes(t *testing.T, c *corev1.Container, agent bool) {
	t.Helper()
	httpPort := containerPort(t, c, "http")
	for name, p := range map[string]*corev1.Probe{"startup /healthz": c.StartupProbe, "liveness /healthz": c.LivenessProbe, "readiness /readyz": c.ReadinessProbe} {
		_, path, _ := strings.Cut(name, " ")
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || resolvePort(t, c, p.HTTPGet.Port) != httpPort {
			t.Errorf("%s probe %s: %+v, want GET %s on port %d", c.Name, name, p, path, httpPort)
		}
	}
	if p := c.StartupProbe; p != nil && p.PeriodSeconds*p.FailureThreshold < 30 {
		t.Errorf("%s startup probe gives %d s: want 30 s or more", c.Name, p.PeriodSeconds*p.FailureThreshold)
	}
}

// preStopSleep returns the seconds of the agent's preStop hook, an exec of
// `floe-probe -sleep Ns` (a program the image holds).
func preStopSleep(t *testing.T, c *corev1.Container) int64 {
	t.Helper()
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil {
		t.Fatalf("agent has no exec preStop hook: %+v", c.Lifecycle)
	}
	cmd := c.Lifecycle.PreStop.Exec.Command
	copied, err := imageFiles(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(cmd) != 3 || !slices.Contains(copied, cmd[0]) || !strings.HasSuffix(cmd[0], "/floe-probe") || cmd[1] != "-sleep" {
		t.Fatalf("agent preStop %v: want floe-probe (of the image: %v) -sleep D", cmd, copied)
	}
	d, err := time.ParseDuration(cmd[2])
	if err != nil || d <= 0 {
		t.Fatalf("agent preStop sleep %q: %v", cmd[2], err)
	}
	return int64(d / time.Second)
}

// durationArg returns the seconds of the flag -name=D of c's args, 0 when
// absent.
func durationArg(t *testing.T, c *corev1.Container, name string) int64 {
	t.Helper()
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			d, err := time.ParseDuration(v)
			if err != nil {
				t.Fatalf("%s %s: %v", c.Name, a, err)
			}
			return int64(d / time.Second)
		}
	}
	return 0
}

// intArg returns the integer flag -name=N of c's args, else def.
func intArg(t *testing.T, c *corev1.Container, name string, def int64) int64 {
	t.Helper()
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%s %s: %v", c.Name, a, err)
			}
			return n
		}
	}
	return def
}

// checkMemory: GOMEMLIMIT is 90% of the container's memory limit, GOMAXPROCS
// the CPU request through the downward API; the agent's buffers, cache and
// headroom fit within GOMEMLIMIT.
func checkMemory(t *testing.T, c *corev1.Container, agent bool) {
	t.Helper()
	limit, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		t.Errorf("%s has no memory limit", c.Name)
		return
	}
	env := envOf(c)
	want := limit.Value() * 9 / 10
	got, err := strconv.ParseInt(strings.TrimSuffix(env["GOMEMLIMIT"].Value, "B"), 10, 64)
	if err != nil || got != want || !strings.HasSuffix(env["GOMEMLIMIT"].Value, "B") {
		t.Errorf("%s GOMEMLIMIT %q, want %dB (90%% of %s)", c.Name, env["GOMEMLIMIT"].Value, want, limit.String())
	}
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		ref := env["GOMAXPROCS"].ValueFrom
		if ref == nil || ref.ResourceFieldRef == nil || ref.ResourceFieldRef.Resource != "requests.cpu" ||
			ref.ResourceFieldRef.ContainerName != c.Name || ref.ResourceFieldRef.Divisor.String() != "1" {
			t.Errorf("%s GOMAXPROCS %+v, want its CPU request (resourceFieldRef requests.cpu, divisor 1)", c.Name, env["GOMAXPROCS"])
		}
	}
	if agent {
		budget := intArg(t, c, "max-buffered-bytes", -1) + intArg(t, c, "cache-bytes", -1) + agentHeadroom
		if budget > got {
			t.Errorf("agent buffers + cache + %d MiB = %d bytes exceed GOMEMLIMIT %d", agentHeadroom>>20, budget, got)
		}
	}
}

// checkSpread: the pods spread across zones and hosts, or by constraints
// given, each selecting the pods it spreads.
func checkSpread(t *testing.T, tmpl corev1.PodTemplateSpec) {
	t.Helper()
	tsc := tmpl.Spec.TopologySpreadConstraints
	if len(tsc) == 0 {
		t.Errorf("pods %v have no topologySpreadConstraints", tmpl.Labels)
	}
	keysSeen := map[string]bool{}
	for _, c := range tsc {
		keysSeen[c.TopologyKey] = true
		sel, err := metav1Selector(c.LabelSelector)
		if err != nil || c.LabelSelector == nil || !sel.Matches(labels.Set(tmpl.Labels)) {
			t.Errorf("spread constraint %+v does not select the pods it spreads (%v)", c, tmpl.Labels)
		}
	}
	if len(tsc) == 2 && (!keysSeen["topology.kubernetes.io/zone"] || !keysSeen["kubernetes.io/hostname"] ||
		tsc[0].WhenUnsatisfiable != corev1.ScheduleAnyway || tsc[1].WhenUnsatisfiable != corev1.ScheduleAnyway) {
		t.Errorf("default spread %+v: want zones and hosts, ScheduleAnyway", tsc)
	}
}

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
	want := fmt.Sprintf("http://%s.streams.svc:%d/readyz", svc.Name, svc.Spec.Ports[0].Port)
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

// goRuntimeEnv are variables the Go runtime reads, not floe's flags.
var goRuntimeEnv = map[string]bool{"GOMEMLIMIT": true, "GOMAXPROCS": true}

// checkCommand: args are `floe CMD` followed by flags the command's usage
// lists, each once, path style as asked; every env var is one the usage
// names (or the Go runtime's).
func checkCommand(t *testing.T, cmd string, c *corev1.Container, env, flags map[string]bool) {
	t.Helper()
	if len(c.Command) != 0 {
		t.Errorf("%s overrides the image's entrypoint: %v", cmd, c.Command)
	}
	if len(c.Args) == 0 || c.Args[0] != cmd {
		t.Fatalf("%s args %v, want %q first", cmd, c.Args, cmd)
	}
	seen := map[string]bool{}
	for _, a := range c.Args[1:] {
		f := flagOf(a)
		if f == "" || !flags[f] {
			t.Errorf("%s arg %q is not a flag of `floe %s -h`", cmd, a, cmd)
		}
		if seen[f] {
			t.Errorf("%s flag -%s given twice: %v", cmd, f, c.Args)
		}
		seen[f] = true
	}
	for _, e := range c.Env {
		if !env[e.Name] && !goRuntimeEnv[e.Name] {
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
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("%s mounts a service account token it never uses", c.Name)
	}
}

func agentContainer(t *testing.T, r rendered) *corev1.Container {
	t.Helper()
	d := r.deployments[r.full+"-agent"]
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
