package check

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checkRendering holds a rendering to what its values ask (want) and to
// the invariants of every rendering: selectors, Services, probes, drain,
// memory, spread, network policies, Pod Security, command lines, Secrets.
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
		if !maps.Equal(r.pdbs[0].Spec.Selector.MatchLabels, agent.Spec.Selector.MatchLabels) {
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

	// Services: gRPC and Kafka (of the type asked), headless gRPC and
	// Kafka, HTTP (ClusterIP).
	comp := r.deployments[r.full+"-compactor"]
	grpcPort, httpPort, kafkaPort := containerPort(t, c, "grpc"), containerPort(t, c, "http"), containerPort(t, c, "kafka")
	checkService(t, r, r.full+"-agent", want.serviceType, pod, c, comp, "grpc", "kafka")
	checkService(t, r, r.full+"-agent-headless", corev1.ServiceTypeClusterIP, pod, c, comp, "grpc", "kafka")
	if h := r.services[r.full+"-agent-headless"]; h != nil && h.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("headless Service clusterIP %q, want None", h.Spec.ClusterIP)
	}
	checkService(t, r, r.full+"-agent-http", corev1.ServiceTypeClusterIP, pod, c, comp, "http")
	if !slices.Contains(c.Args, fmt.Sprintf("-listen=:%d", grpcPort)) {
		t.Errorf("agent args %v do not listen on the gRPC container port %d", c.Args, grpcPort)
	}
	if !slices.Contains(c.Args, fmt.Sprintf("-metrics-listen=:%d", httpPort)) {
		t.Errorf("agent args %v do not serve HTTP on the container port %d", c.Args, httpPort)
	}
	if !slices.Contains(c.Args, fmt.Sprintf("-kafka-listen=:%d", kafkaPort)) {
		t.Errorf("agent args %v do not serve Kafka on the container port %d", c.Args, kafkaPort)
	}
	checkAdvertisedHost(t, c, want.kafkaAdvertisedHost)
	checkProbes(t, c)

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
	if want.networkPolicy {
		checkKafkaLikeGRPC(t, r.policies[r.full+"-agent"], grpcPort, kafkaPort)
	}
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
	checkProbes(t, &cc)
	checkMemory(t, &cc, false)
	checkSpread(t, comp.Spec.Template)
	cport := containerPort(t, &cc, "http")
	if !slices.Contains(cc.Args, fmt.Sprintf("-metrics-listen=:%d", cport)) {
		t.Errorf("compactor args %v do not serve HTTP on its container port %d", cc.Args, cport)
	}
	// Reachable for scraping: a ClusterIP Service on its HTTP port.
	checkService(t, r, r.full+"-compactor", corev1.ServiceTypeClusterIP, comp.Spec.Template, &cc, agent, "http")
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
func checkService(t *testing.T, r rendered, name string, typ corev1.ServiceType, tmpl corev1.PodTemplateSpec, c *corev1.Container, other *appsv1.Deployment, ports ...string) {
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
	if len(svc.Spec.Ports) != len(ports) {
		t.Errorf("Service %s ports %+v: want only %v", name, svc.Spec.Ports, ports)
		return
	}
	for i, port := range ports {
		sp := svc.Spec.Ports[i]
		if sp.Name != port || resolvePort(t, c, sp.TargetPort) != containerPort(t, c, port) || sp.Port != containerPort(t, c, port) {
			t.Errorf("Service %s port %+v: want %s, on the container's port %d", name, sp, port, containerPort(t, c, port))
		}
	}
}

// checkKafkaLikeGRPC: the agent NetworkPolicy lets the Kafka port be
// reached by exactly the peers that reach gRPC (one rule opens both).
func checkKafkaLikeGRPC(t *testing.T, np *networkingv1.NetworkPolicy, grpcPort, kafkaPort int32) {
	t.Helper()
	if np == nil {
		t.Error("no agent NetworkPolicy")
		return
	}
	for _, rule := range np.Spec.Ingress {
		var grpc, kafka bool
		for _, p := range rule.Ports {
			grpc = grpc || (p.Port != nil && p.Port.IntValue() == int(grpcPort))
			kafka = kafka || (p.Port != nil && p.Port.IntValue() == int(kafkaPort))
		}
		if grpc != kafka {
			t.Errorf("agent NetworkPolicy rule %+v opens one of gRPC (%d) and Kafka (%d) without the other", rule.Ports, grpcPort, kafkaPort)
		}
	}
}

// checkAdvertisedHost: the agent tells Kafka clients to come back to the
// host given, by default its own pod IP from the downward API (so that a
// client reaches the pod it was told about, not any pod behind a Service).
func checkAdvertisedHost(t *testing.T, c *corev1.Container, want string) {
	t.Helper()
	if want != "" {
		if !slices.Contains(c.Args, "-kafka-advertised-host="+want) {
			t.Errorf("agent args %v do not advertise %s to Kafka clients", c.Args, want)
		}
		if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "FLOE_KAFKA_ADVERTISED_HOST" }) {
			t.Errorf("agent env %+v also sets FLOE_KAFKA_ADVERTISED_HOST", c.Env)
		}
		return
	}
	i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "FLOE_KAFKA_ADVERTISED_HOST" })
	if i < 0 || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.FieldRef == nil || c.Env[i].ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("agent env %+v: want FLOE_KAFKA_ADVERTISED_HOST from status.podIP", c.Env)
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "-kafka-advertised-host") }) {
		t.Errorf("agent args %v override the pod IP advertised to Kafka clients", c.Args)
	}
}

// checkProbes: a startup probe, liveness /healthz and readiness /readyz,
// all on the HTTP port.
func checkProbes(t *testing.T, c *corev1.Container) {
	t.Helper()
	httpPort := containerPort(t, c, "http")
	scheme := corev1.URISchemeHTTP
	if hasFlag(c, "http-tls-cert") { // tls_test.go
		scheme = corev1.URISchemeHTTPS
	}
	for name, p := range map[string]*corev1.Probe{"startup /healthz": c.StartupProbe, "liveness /healthz": c.LivenessProbe, "readiness /readyz": c.ReadinessProbe} {
		_, path, _ := strings.Cut(name, " ")
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || resolvePort(t, c, p.HTTPGet.Port) != httpPort ||
			p.HTTPGet.Scheme != scheme {
			t.Errorf("%s probe %s: %+v, want GET %s %s on port %d", c.Name, name, p, scheme, path, httpPort)
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
	if got := putChecksumArg(c.Args); got != want.putChecksum {
		t.Errorf("%s -s3-put-checksum %q, want %q", c.Name, got, want.putChecksum)
	}
	if got := slices.Contains(c.Args, "-s3-unsigned-payload"); got != want.unsignedPayload {
		t.Errorf("%s -s3-unsigned-payload %v, want %v", c.Name, got, want.unsignedPayload)
	}
}

// putChecksumArg is the value of a -s3-put-checksum=V argument, "" without one.
func putChecksumArg(args []string) string {
	v := ""
	for _, a := range args {
		if s, ok := strings.CutPrefix(a, "-s3-put-checksum="); ok {
			v = s
		}
	}
	return v
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
