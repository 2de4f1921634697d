package check

import (
	"strconv"

	"go.yaml.in/yaml/v3"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// testValues are the values files of testdata the chart checks render.
var testValues = []string{"values-own-secrets.yaml", "values-existing-secrets.yaml", "values-escape-hatches.yaml"}

func readDeployDoc(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// installArgs returns the arguments after the chart of the `helm install
// floe deploy/helm/floe ...` command of docs/deploy.md (continuation lines
// joined).
func installArgs(t *testing.T, doc string) []string {
	t.Helper()
	i := strings.Index(doc, "helm install floe deploy/helm/floe")
	if i < 0 {
		t.Fatal("docs/deploy.md has no `helm install floe deploy/helm/floe` command")
	}
	var line strings.Builder
	for _, l := range strings.Split(doc[i:], "\n") {
		more := strings.HasSuffix(l, "\\")
		line.WriteString(strings.TrimSuffix(l, "\\") + " ")
		if !more {
			break
		}
	}
	words, err := shellWords(line.String())
	if err != nil {
		t.Fatal(err)
	}
	return words[4:]
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// documentedRenders returns the renderings docs/deploy.md documents, by
// name: its install command, and each values example (every yaml block of
// the page) added to that command with -f.
func documentedRenders(t *testing.T) map[string][]string {
	t.Helper()
	doc := readDeployDoc(t)
	install := installArgs(t, doc)
	out := map[string][]string{"docs install": install}
	blocks := yamlBlock.FindAllStringSubmatch(doc, -1)
	if len(blocks) < 3 {
		t.Fatalf("docs/deploy.md has %d values examples (yaml blocks), want 3 or more", len(blocks))
	}
	dir := t.TempDir()
	for i, b := range blocks {
		name := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(b[1], "\n", 2)[0], "#"))
		path := filepath.Join(dir, strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return '-'
		}, strings.ToLower(name))+".yaml")
		if err := os.WriteFile(path, []byte(b[1]), 0o644); err != nil {
			t.Fatal(err)
		}
		out["docs example "+string(rune('1'+i))+": "+name] = append(append([]string{}, install...), "-f", path)
	}
	return out
}

// checkDocumented checks a rendering of values not written for the test:
// the expectations are read from the rendering itself, the invariants of
// checkRendering hold.
func checkDocumented(t *testing.T, r rendered) {
	t.Helper()
	agent := r.deployments[r.full+"-agent"]
	if agent == nil {
		t.Fatalf("no agent Deployment %s-agent among %v", r.full, keys(r.deployments))
	}
	c := agentContainer(t, r)
	env := envOf(c)
	want := check{
		image: c.Image, hpa: len(r.hpas) > 0, pdb: len(r.pdbs) > 0, networkPolicy: len(r.policies) > 0,
		pgKey:          env["FLOE_POSTGRES_URL"].ValueFrom.SecretKeyRef.Key,
		pgSecret:       env["FLOE_POSTGRES_URL"].ValueFrom.SecretKeyRef.Name,
		serviceAccount: agent.Spec.Template.Spec.ServiceAccountName,
	}
	for _, a := range c.Args {
		want.pathStyle = want.pathStyle || a == "-s3-path-style"
		want.unsignedPayload = want.unsignedPayload || a == "-s3-unsigned-payload"
	}
	want.putChecksum = putChecksumArg(c.Args)
	if e, ok := env["AWS_ACCESS_KEY_ID"]; ok {
		want.s3Secret = e.ValueFrom.SecretKeyRef.Name
	}
	if agent.Spec.Replicas != nil {
		want.agentReplicas = *agent.Spec.Replicas
	}
	if comp := r.deployments[r.full+"-compactor"]; comp != nil {
		want.compactor = *comp.Spec.Replicas
	}
	want.serviceType = corev1.ServiceTypeClusterIP
	if s := r.services[r.full+"-agent"]; s != nil && s.Spec.Type != "" {
		want.serviceType = s.Spec.Type
	}
	checkRendering(t, r, want)
}

// TestHelmChartDocumentedInstall: the install of docs/deploy.md, and each
// of its values examples on top, render for a release named floe and pass
// every check; the Secrets the chart makes (PostgreSQL URL and S3 keys
// given as values) never take a name the page tells users to create by
// hand, which would make Helm refuse the install.
func TestHelmChartDocumentedInstall(t *testing.T) {
	doc := readDeployDoc(t)
	m := regexp.MustCompile("(?s)The install above renders.*?```text\n(.*?)```").FindStringSubmatch(doc)
	if m == nil {
		t.Fatal("docs/deploy.md lists no manifests of the install")
	}
	listed := strings.Fields(m[1])
	if got := renderAs(t, "floe", installArgs(t, doc)...).names; !slices.Equal(listed, got) {
		t.Errorf("docs/deploy.md lists the install's manifests as %v, the chart renders %v", listed, got)
	}
	for name, args := range documentedRenders(t) {
		t.Run(name, func(t *testing.T) { checkDocumented(t, renderAs(t, "floe", args...)) })
	}
	created := map[string]bool{}
	for _, m := range regexp.MustCompile(`kubectl create secret generic ([a-z0-9.-]+)`).FindAllStringSubmatch(doc, -1) {
		created[m[1]] = true
	}
	if len(created) == 0 {
		t.Fatal("docs/deploy.md tells to create no Secret (`kubectl create secret generic NAME`)")
	}
	own := renderAs(t, "floe", append(installArgs(t, doc), "--set", "postgres.url=postgres://u:p@db/floe",
		"--set", "s3.accessKeyId=AK", "--set", "s3.secretAccessKey=SK")...)
	if len(own.secrets) != 2 {
		t.Fatalf("the chart's own Secrets: %v, want two", keys(own.secrets))
	}
	for name := range own.secrets {
		if created[name] {
			t.Errorf("release floe makes the Secret %s, a name docs/deploy.md tells users to create: Helm would refuse the install", name)
		}
	}
}

// usageDefault returns the "(default X)" of flag -name in a usage text.
func usageDefault(t *testing.T, usage, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(name) + ` .*\n(?:\s+.*\n)*?.*\(default ([^)]+)\)`).FindStringSubmatch(usage)
	if m == nil {
		t.Fatalf("no default of -%s in the usage", name)
	}
	return m[1]
}

// TestAgentSoftLimitAgrees: the agent's own soft memory limit (without
// GOMEMLIMIT) is -max-buffered-bytes + -cache-bytes + -memory-room-bytes,
// the headroom docs/operations.md states; docs/deploy.md states that sum for the defaults of
// `floe agent -h`, and the chart's memory budgets default to the same
// figures.
func TestAgentSoftLimitAgrees(t *testing.T) {
	usage := floeUsage(t, "agent")
	buffered, err1 := strconv.ParseInt(usageDefault(t, usage, "max-buffered-bytes"), 10, 64)
	cache, err2 := strconv.ParseInt(usageDefault(t, usage, "cache-bytes"), 10, 64)
	room, err3 := strconv.ParseInt(usageDefault(t, usage, "memory-room-bytes"), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatal(err1, err2, err3)
	}
	if room != agentHeadroom {
		t.Errorf("floe agent -h's -memory-room-bytes default %d, the checks' headroom %d", room, int64(agentHeadroom))
	}
	ops, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`-max-buffered-bytes` \\+ `-cache-bytes` \\+ ([0-9]+) MiB").FindSubmatch(ops)
	if m == nil {
		t.Fatal("docs/operations.md does not state the agent's soft limit as -max-buffered-bytes + -cache-bytes + N MiB")
	}
	headroom, _ := strconv.ParseInt(string(m[1]), 10, 64)
	if headroom<<20 != agentHeadroom {
		t.Errorf("docs/operations.md's headroom %d MiB, the checks' %d MiB (cmd/floe/memlimit.go)", headroom, agentHeadroom>>20)
	}
	total := (buffered + cache + agentHeadroom) >> 20
	d := regexp.MustCompile(`\+ ([0-9]+) MiB = ([0-9]+) MiB`).FindStringSubmatch(readDeployDoc(t))
	if d == nil || d[1] != strconv.FormatInt(headroom, 10) || d[2] != strconv.FormatInt(total, 10) {
		t.Errorf("docs/deploy.md states the agent's soft limit as %v, want + %d MiB = %d MiB (floe agent -h defaults)", d, headroom, total)
	}
	var values struct {
		Agent struct {
			Memory struct {
				MaxBufferedBytes int64 `yaml:"maxBufferedBytes"`
				CacheBytes       int64 `yaml:"cacheBytes"`
				HeadroomBytes    int64 `yaml:"headroomBytes"`
			} `yaml:"memory"`
		} `yaml:"agent"`
	}
	text, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "helm", "floe", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(text, &values); err != nil {
		t.Fatal(err)
	}
	if mem := values.Agent.Memory; mem.MaxBufferedBytes != buffered || mem.CacheBytes != cache || mem.HeadroomBytes != agentHeadroom {
		t.Errorf("chart agent.memory %+v, want floe agent's defaults %d, %d and the headroom %d", mem, buffered, cache, int64(agentHeadroom))
	}
}
