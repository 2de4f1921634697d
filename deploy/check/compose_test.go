package check

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of the Compose specification deploy/compose.yaml
// uses; decoding refuses any other field, so a misspelt key fails.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]struct{}       `yaml:"volumes"`
	Secrets  map[string]composeSecret  `yaml:"secrets"` // compose.tls.yaml
}

// composeSecret is a secret from a file, mounted at /run/secrets/NAME.
type composeSecret struct {
	File string `yaml:"file"`
}

type composeService struct {
	Image           string                       `yaml:"image"`
	Build           *composeBuild                `yaml:"build"`
	Entrypoint      []string                     `yaml:"entrypoint"`
	Command         []string                     `yaml:"command"`
	Environment     map[string]string            `yaml:"environment"`
	Ports           []string                     `yaml:"ports"`
	Volumes         []string                     `yaml:"volumes"`
	DependsOn       map[string]composeDependency `yaml:"depends_on"`
	Healthcheck     *composeHealthcheck          `yaml:"healthcheck"`
	Restart         string                       `yaml:"restart"`
	StopGracePeriod string                       `yaml:"stop_grace_period"`
	Secrets         []string                     `yaml:"secrets"`
}

type composeBuild struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

type composeDependency struct {
	Condition string `yaml:"condition"`
}

type composeHealthcheck struct {
	Test     []string `yaml:"test"`
	Interval string   `yaml:"interval"`
	Timeout  string   `yaml:"timeout"`
	Retries  int      `yaml:"retries"`
}

func loadCompose(t *testing.T) (composeFile, string) {
	t.Helper()
	return loadComposeFile(t, "compose.yaml")
}

// loadComposeFile decodes deploy/NAME strictly.
func loadComposeFile(t *testing.T, name string) (composeFile, string) {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "deploy")
	text, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	dec := yaml.NewDecoder(bytes.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("deploy/%s does not decode strictly: %v", name, err)
	}
	return f, dir
}

// TestComposeStrictDecoderRefusesUnknownFields: the compose decoder is
// strict (a misspelt key fails), and depends_on in list form (start order
// only) is refused.
func TestComposeStrictDecoderRefusesUnknownFields(t *testing.T) {
	for _, bad := range []string{
		"services:\n  a:\n    imgae: x:1\n",
		"services:\n  a:\n    image: x:1\n    depends_on: [b]\n",
		"services:\n  a:\n    image: x:1\n    healthcheck: {test: [CMD, true], intervall: 1s}\n",
	} {
		var f composeFile
		dec := yaml.NewDecoder(strings.NewReader(bad))
		dec.KnownFields(true)
		if err := dec.Decode(&f); err == nil {
			t.Errorf("decoded without error:\n%s", bad)
		}
	}
}

// TestComposeFile: deploy/compose.yaml decodes strictly; its images are
// pinned; every dependency exists and is waited on by health or completion;
// two agents and a compactor run floe with only the flags and environment
// `floe agent -h` and `floe compactor -h` name, against the PostgreSQL,
// the S3 server and the bucket the file itself sets up; the agents'
// health checks ask /readyz.
func TestComposeFile(t *testing.T) {
	f, dir := loadCompose(t)
	agentEnv, agentFlags := usageNames(floeUsage(t, "agent"))
	compEnv, compFlags := usageNames(floeUsage(t, "compactor"))

	hostPorts := map[string]string{}
	for name, s := range f.Services {
		switch {
		case s.Image == "":
			t.Errorf("service %s names no image", name)
		case s.Build != nil:
			// floe's own, built here from the checkout.
		default:
			if err := pinnedRelease(s.Image); err != nil {
				t.Errorf("service %s image %s: %v", name, s.Image, err)
			}
		}
		if s.Build != nil {
			if _, err := os.Stat(filepath.Join(dir, s.Build.Context, s.Build.Dockerfile)); err != nil {
				t.Errorf("service %s builds from a missing Dockerfile: %v", name, err)
			}
		}
		for dep, d := range s.DependsOn {
			target, ok := f.Services[dep]
			switch {
			case !ok:
				t.Errorf("service %s depends on %s, which does not exist", name, dep)
			case d.Condition == "service_healthy" && target.Healthcheck == nil:
				t.Errorf("service %s waits for %s to be healthy, which has no healthcheck", name, dep)
			case d.Condition != "service_healthy" && d.Condition != "service_completed_successfully":
				t.Errorf("service %s depends on %s with condition %q: want health or completion, not start order", name, dep, d.Condition)
			}
		}
		if h := s.Healthcheck; h != nil && (len(h.Test) < 2 || (h.Test[0] != "CMD" && h.Test[0] != "CMD-SHELL")) {
			t.Errorf("service %s healthcheck test %v: want CMD or CMD-SHELL form", name, h.Test)
		}
		for _, p := range s.Ports {
			host, _, ok := strings.Cut(p, ":")
			if !ok {
				continue
			}
			if other, dup := hostPorts[host]; dup {
				t.Errorf("host port %s published by %s and %s", host, other, name)
			}
			hostPorts[host] = name
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
				continue // bind mounts: checked by TestComposeTrinoCatalog
			}
			if _, ok := f.Volumes[src]; !ok {
				t.Errorf("service %s mounts volume %s, not declared", name, src)
			}
		}
	}

	// PostgreSQL and the S3 server as the file sets them up.
	pg, ok := f.Services["postgres"]
	if !ok || pg.Healthcheck == nil || !slices.Contains(pg.Healthcheck.Test, "pg_isready") {
		t.Fatalf("no postgres service with a pg_isready healthcheck: %+v", pg)
	}
	s3Name, s3Port, s3User, s3Secret := minioService(t, f)
	bucket := createdBucket(t, f, s3Name, s3Port, s3User, s3Secret)

	var agents []string
	compactors := 0
	advertised := map[string]int{} // Kafka host ports the agents advertise
	for name, s := range f.Services {
		if len(s.Command) == 0 {
			continue
		}
		var env, flags map[string]bool
		switch s.Command[0] {
		case "agent":
			agents = append(agents, name)
			env, flags = agentEnv, agentFlags
			checkHealth(t, name, s, "7071", "/readyz")
			advertised[checkComposeKafka(t, name, s)]++
		case "compactor":
			compactors++
			env, flags = compEnv, compFlags
			// Ready means its stores and the Iceberg catalog's tables.
			checkHealth(t, name, s, "7072", "/readyz")
		default:
			continue
		}
		if s.Build == nil || s.Build.Dockerfile != "deploy/Dockerfile" {
			t.Errorf("service %s does not build deploy/Dockerfile: %+v", name, s.Build)
		}
		for _, a := range s.Command[1:] {
			if fl := flagOf(a); fl == "" || !flags[fl] {
				t.Errorf("service %s arg %q is not a flag of `floe %s -h`", name, a, s.Command[0])
			}
		}
		for k := range s.Environment {
			if !env[k] {
				t.Errorf("service %s env %s is not read by `floe %s` (its -h names %v)", name, k, s.Command[0], keys(env))
			}
		}
		checkStores(t, name, s, pg, s3Name, s3Port, s3User, s3Secret, bucket)
		for _, dep := range []string{"postgres", "createbucket"} {
			if _, ok := s.DependsOn[dep]; !ok {
				t.Errorf("service %s does not wait for %s", name, dep)
			}
		}
	}
	if len(agents) != 2 || compactors != 1 {
		t.Errorf("agents %v and %d compactors, want 2 and 1", agents, compactors)
	}
	for p, n := range advertised {
		if n > 1 {
			t.Errorf("%d agents advertise Kafka port %s: a client would be sent to the wrong one", n, p)
		}
	}
}

// checkComposeKafka: an agent serves Kafka (-kafka-listen=:P), publishes
// it on a host port H, and tells clients 127.0.0.1:H, so that a client on
// the host reaches the agent it was told about. It returns H.
func checkComposeKafka(t *testing.T, name string, s composeService) string {
	t.Helper()
	arg := func(flag string) string {
		for _, a := range s.Command {
			if v, ok := strings.CutPrefix(a, "-"+flag+"="); ok {
				return v
			}
		}
		return ""
	}
	listen := strings.TrimPrefix(arg("kafka-listen"), ":")
	if listen == "" {
		t.Errorf("service %s does not serve Kafka (-kafka-listen=:PORT)", name)
		return ""
	}
	host := ""
	for _, p := range s.Ports {
		if h, c, ok := strings.Cut(p, ":"); ok && c == listen {
			host = h
		}
	}
	if host == "" {
		t.Errorf("service %s publishes no host port for Kafka's %s: %v", name, listen, s.Ports)
	}
	if arg("kafka-advertised-host") != "127.0.0.1" || arg("kafka-advertised-port") != host {
		t.Errorf("service %s advertises %s:%s to Kafka clients, want 127.0.0.1:%s (its published port)", name, arg("kafka-advertised-host"), arg("kafka-advertised-port"), host)
	}
	return host
}

// minioService returns the S3 server's service name, port and root keys.
func minioService(t *testing.T, f composeFile) (name, port, user, secret string) {
	t.Helper()
	for n, s := range f.Services {
		if !strings.Contains(s.Image, "minio/minio") {
			continue
		}
		port = "9000"
		if i := slices.Index(s.Command, "--address"); i >= 0 && i+1 < len(s.Command) {
			port = strings.TrimPrefix(s.Command[i+1], ":")
		}
		if s.Healthcheck == nil {
			t.Fatalf("MinIO service %s has no healthcheck", n)
		}
		// `mc ready ALIAS` asks the alias' URL: mc's default "local" is
		// port 9000, so another port needs MC_HOST_<ALIAS>.
		if i := slices.Index(s.Healthcheck.Test, "ready"); i > 0 && s.Healthcheck.Test[i-1] == "mc" && i+1 < len(s.Healthcheck.Test) {
			alias := s.Healthcheck.Test[i+1]
			hostPort := "localhost:9000"
			if v, ok := s.Environment["MC_HOST_"+alias]; ok {
				u, err := url.Parse(v)
				if err != nil {
					t.Fatalf("MinIO MC_HOST_%s: %v", alias, err)
				}
				hostPort = u.Host
			}
			if !strings.HasSuffix(hostPort, ":"+port) {
				t.Errorf("MinIO healthcheck `mc ready %s` asks %s, but MinIO listens on port %s", alias, hostPort, port)
			}
		} else if !slices.ContainsFunc(s.Healthcheck.Test, func(w string) bool { return strings.Contains(w, ":"+port+"/") }) {
			t.Errorf("MinIO healthcheck %v does not ask its port %s", s.Healthcheck.Test, port)
		}
		return n, port, s.Environment["MINIO_ROOT_USER"], s.Environment["MINIO_ROOT_PASSWORD"]
	}
	t.Fatal("no MinIO service")
	return
}

var mcAlias = regexp.MustCompile(`mc alias set (\S+) (\S+) (\S+) (\S+)`)
var mcMb = regexp.MustCompile(`mc mb (?:--ignore-existing |-p )*(\S+)/(\S+)`)

// createdBucket returns the bucket a one-shot mc service makes on the S3
// server, after it is healthy.
func createdBucket(t *testing.T, f composeFile, s3Name, s3Port, user, secret string) string {
	t.Helper()
	for n, s := range f.Services {
		if !strings.Contains(s.Image, "minio/mc") {
			continue
		}
		script := strings.Join(append(slices.Clone(s.Entrypoint), s.Command...), " ")
		a := mcAlias.FindStringSubmatch(script)
		b := mcMb.FindStringSubmatch(script)
		if a == nil || b == nil || a[1] != b[1] {
			t.Fatalf("service %s: no `mc alias set` then `mc mb` on that alias in %q", n, script)
		}
		if want := fmt.Sprintf("http://%s:%s", s3Name, s3Port); a[2] != want || a[3] != user || a[4] != secret {
			t.Errorf("service %s: alias %s %s, want %s with the MinIO root keys", n, a[2], a[3], want)
		}
		if d := s.DependsOn[s3Name]; d.Condition != "service_healthy" {
			t.Errorf("service %s does not wait for %s to be healthy", n, s3Name)
		}
		return b[2]
	}
	t.Fatal("no service creates the bucket (minio/mc)")
	return ""
}

// checkHealth: a floe service's healthcheck runs a program the image holds
// (deploy/Dockerfile copies it into the final stage) against path on the
// HTTP port the service listens on (-metrics-listen, else def).
func checkHealth(t *testing.T, name string, s composeService, def, path string) {
	t.Helper()
	port := def
	for _, a := range s.Command {
		if v, ok := strings.CutPrefix(a, "-metrics-listen="); ok {
			_, port, _ = strings.Cut(v, ":")
		}
	}
	want := fmt.Sprintf("http://127.0.0.1:%s%s", port, path)
	if s.Healthcheck == nil || len(s.Healthcheck.Test) < 2 || s.Healthcheck.Test[0] != "CMD" || !slices.Contains(s.Healthcheck.Test, want) {
		t.Errorf("%s healthcheck %+v does not ask %s", name, s.Healthcheck, want)
		return
	}
	copied, err := imageFiles(repoRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(copied, s.Healthcheck.Test[1]) {
		t.Errorf("%s healthcheck runs %s, which the image does not hold (it copies %v)", name, s.Healthcheck.Test[1], copied)
	}
}

// checkStores: a floe service's PostgreSQL URL, endpoint, keys and bucket
// are those of the file's own PostgreSQL and S3 server.
func checkStores(t *testing.T, name string, s, pg composeService, s3Name, s3Port, user, secret, bucket string) {
	t.Helper()
	env := s.Environment
	u, err := url.Parse(env["FLOE_POSTGRES_URL"])
	if err != nil || u.Scheme != "postgres" {
		t.Fatalf("service %s FLOE_POSTGRES_URL %q: %v", name, env["FLOE_POSTGRES_URL"], err)
	}
	pw, _ := u.User.Password()
	if u.Hostname() != "postgres" || u.User.Username() != pg.Environment["POSTGRES_USER"] ||
		pw != pg.Environment["POSTGRES_PASSWORD"] || strings.TrimPrefix(u.Path, "/") != pg.Environment["POSTGRES_DB"] {
		t.Errorf("service %s FLOE_POSTGRES_URL %s is not the postgres service's user, password and database", name, u.Redacted())
	}
	if want := fmt.Sprintf("http://%s:%s", s3Name, s3Port); env["FLOE_S3_ENDPOINT"] != want {
		t.Errorf("service %s FLOE_S3_ENDPOINT %s, want %s", name, env["FLOE_S3_ENDPOINT"], want)
	}
	if env["AWS_ACCESS_KEY_ID"] != user || env["AWS_SECRET_ACCESS_KEY"] != secret {
		t.Errorf("service %s S3 keys are not MinIO's root keys", name)
	}
	if env["FLOE_S3_BUCKET"] != bucket {
		t.Errorf("service %s FLOE_S3_BUCKET %q, want the bucket made, %q", name, env["FLOE_S3_BUCKET"], bucket)
	}
	if !slices.Contains(s.Command, "-s3-path-style") {
		t.Errorf("service %s lacks -s3-path-style (MinIO without a domain needs it)", name)
	}
	if d := s.DependsOn["postgres"]; d.Condition != "service_healthy" {
		t.Errorf("service %s does not wait for postgres to be healthy", name)
	}
	if d := s.DependsOn["createbucket"]; d.Condition != "service_completed_successfully" {
		t.Errorf("service %s does not wait for the bucket", name)
	}
}

// singleNumberReleases are images whose releases are numbered by one
// integer (Trino 479): for them a bare number is a release, not a line.
var singleNumberReleases = map[string]bool{"trinodb/trino": true}

var bareMajor = regexp.MustCompile(`^v?[0-9]+$`)

// pinnedRelease: pinned (a tag, not latest; or a digest) and the tag names
// a release, not a moving line such as postgres:15 (every 15.x in turn).
func pinnedRelease(image string) error {
	if err := pinned(image); err != nil {
		return err
	}
	if strings.Contains(image, "@sha256:") {
		return nil
	}
	i := strings.LastIndex(image, ":")
	repo, tag := image[:i], image[i+1:]
	if bareMajor.MatchString(tag) && !singleNumberReleases[repo] {
		return fmt.Errorf("tag %s is a release line that moves, not a release: name one (%s:%s.N)", tag, repo, tag)
	}
	return nil
}

// TestComposePinnedReleaseRefusesLines: postgres:15 (the earlier compose
// file's) and latest are refused; a release, a RELEASE stamp, Trino's
// numbers and digests pass.
func TestComposePinnedReleaseRefusesLines(t *testing.T) {
	for _, bad := range []string{"postgres:15", "postgres", "postgres:latest", "redis:v7"} {
		if pinnedRelease(bad) == nil {
			t.Errorf("%s passed as pinned", bad)
		}
	}
	for _, good := range []string{"postgres:15.14", "quay.io/minio/mc:RELEASE.2025-04-16T18-13-26Z", "trinodb/trino:479",
		"postgres@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"} {
		if err := pinnedRelease(good); err != nil {
			t.Errorf("%s refused: %v", good, err)
		}
	}
}

// TestComposeTrinoWaitsForCompactor: Trino's Iceberg JDBC catalog needs
// its tables at start, which the compactor creates before it is ready: the
// trino service waits for the compactor to be healthy, whose health check
// asks /readyz (ready only once the catalog answers).
func TestComposeTrinoWaitsForCompactor(t *testing.T) {
	f, _ := loadCompose(t)
	tr, ok := f.Services["trino"]
	if !ok {
		t.Fatal("no trino service")
	}
	var compactor string
	for name, s := range f.Services {
		if len(s.Command) > 0 && s.Command[0] == "compactor" {
			compactor = name
		}
	}
	if compactor == "" {
		t.Fatal("no compactor service")
	}
	if d := tr.DependsOn[compactor]; d.Condition != "service_healthy" {
		t.Errorf("trino depends on %s with %+v: want service_healthy (the catalog's tables exist once it is ready)", compactor, d)
	}
	if h := f.Services[compactor].Healthcheck; h == nil || !slices.ContainsFunc(h.Test, func(w string) bool { return strings.HasSuffix(w, "/readyz") }) {
		t.Errorf("compactor healthcheck %+v does not ask /readyz", h)
	}
}
