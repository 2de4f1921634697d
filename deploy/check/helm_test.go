package check

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

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
	"k8s.io/client-go/kubernetes/scheme"
)

// After -drain-timeout (the flush and commit of what producers handed in)
// the agent gives the answers 2 s to go out (docs/operations.md).
const agentAnswerSeconds = 2

// agentHeadroom is the room the agent's soft memory limit keeps beyond its
// buffers and cache (-memory-room-bytes's default, cmd/floe/memlimit.go;
// docs/operations.md says it).
const agentHeadroom = 160 << 20

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
			Port      string `yaml:"port"`
			Path      string `yaml:"path"`
			Interval  string `yaml:"interval"`
			Scheme    string `yaml:"scheme"`
			TLSConfig *struct {
				ServerName string `yaml:"serverName"`
				CA         struct {
					Secret struct {
						Name string `yaml:"name"`
						Key  string `yaml:"key"`
					} `yaml:"secret"`
				} `yaml:"ca"`
			} `yaml:"tlsConfig"`
			BearerTokenSecret *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"bearerTokenSecret"`
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
	putChecksum     string // "": the default (crc32c), no flag
	unsignedPayload bool
	pgSecret, pgKey string
	s3Secret        string // "": the AWS chain
	envPresent      []string
	extraAgentArgs  []string
	serviceType     corev1.ServiceType
	serviceAccount  string
	// kafkaAdvertisedHost: "" means the pod IP (the default).
	kafkaAdvertisedHost string
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
		putChecksum: "none", unsignedPayload: true,
		pgSecret: "rel-floe-postgres", pgKey: "url", s3Secret: "rel-floe-s3",
		envPresent: []string{"FLOE_POSTGRES_URL", "FLOE_S3_BUCKET", "FLOE_S3_PREFIX", "FLOE_S3_ENDPOINT",
			"AWS_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"},
		extraAgentArgs:      []string{"-linger=100ms", "-cache-bytes=536870912"},
		serviceType:         corev1.ServiceTypeClusterIP,
		serviceAccount:      "floe-runner",
		kafkaAdvertisedHost: "kafka.example.com",
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
		{[]string{"s3.putChecksum=md5"}, "putChecksum"},
		{[]string{"s3.unsignedPayload=yes"}, "unsignedPayload"},
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
