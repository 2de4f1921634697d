package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/objectstore"
)

// loadArgs loads command's configuration from a YAML text (none when
// empty), an environment and flags.
func loadArgs(t *testing.T, command, yamlText string, env map[string]string, args ...string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	cf := registerConfig(fs, command)
	if yamlText != "" {
		path := filepath.Join(t.TempDir(), "floe.yaml")
		if err := os.WriteFile(path, []byte(yamlText), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append([]string{"-config", path}, args...)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return cf.load(fs, func(k string) string { return env[k] })
}

// required are the settings without a default, for agent and compactor.
const required = "postgres:\n  url: postgres://u:pw@h/db\ns3:\n  bucket: b\n"

// TestConfigBadSettings: each class of bad setting is refused at start
// with the setting's name and why.
func TestConfigBadSettings(t *testing.T) {
	cases := []struct {
		name, yaml string
		env        map[string]string
		args       []string
		want       string
	}{
		{"unknown key", required + "batcher:\n  lingr: 1s\n", nil, nil, "line 6: unknown setting batcher.lingr"},
		{"unknown section", required + "batchr:\n  linger: 1s\n", nil, nil, `line 5: unknown section "batchr"`},
		{"bad type", required + "batcher:\n  max_file_bytes: lots\n", nil, nil, `line 6: batcher.max_file_bytes: "lots" is not an integer`},
		{"bad type bool", required + "server:\n  fail_fast: perhaps\n", nil, nil, `server.fail_fast: "perhaps" is not true or false`},
		{"section not a mapping", required + "agent: 3\n", nil, nil, "section agent must be a mapping"},
		{"out of range", required + "batcher:\n  max_file_bytes: 100\n", nil, nil, "batcher.max_file_bytes: 100 must be at least 1024"},
		{"negative", required + "agent:\n  cache_bytes: -1\n", nil, nil, "agent.cache_bytes: -1 must not be negative"},
		{"buffered below file", required + "batcher:\n  max_buffered_bytes: 1024\n", nil, nil, "batcher.max_buffered_bytes: 1024 must be at least batcher.max_file_bytes"},
		{"bad duration", required + "batcher:\n  commit_timeout: 10\n", nil, nil, `batcher.commit_timeout: "10" is not a duration`},
		{"bad duration env", required, map[string]string{"FLOE_SERVER_READY_INTERVAL": "soon"}, nil, `environment FLOE_SERVER_READY_INTERVAL: server.ready_interval: "soon" is not a duration`},
		{"bad duration flag", required, nil, []string{"-upload-timeout", "x"}, `flag -upload-timeout: batcher.upload_timeout: "x" is not a duration`},
		{"linger zero", required + "batcher:\n  linger: 0s\n", nil, nil, "batcher.linger: 0s must be positive (set by config file "},
		{"linger zero env", required, map[string]string{"FLOE_BATCHER_LINGER": "0s"}, nil, "batcher.linger: 0s must be positive (set by environment FLOE_BATCHER_LINGER)"},
		{"linger too long", required, nil, []string{"-linger", "2m"}, "batcher.linger: 2m0s must be at most 1m (set by flag -linger)"},
		{"files per commit too many", required, nil, []string{"-max-files-per-commit", "65"}, "batcher.max_files_per_commit: 65 must be at most 64"},
		{"files per commit zero", required + "batcher:\n  max_files_per_commit: 0\n", nil, nil, "batcher.max_files_per_commit: 0 must be positive"},
		{"log level", required + "log:\n  level: loud\n", nil, nil, `log.level: "loud" must be debug`},
		{"log format", required, nil, []string{"-log-format", "xml"}, `log.format: "xml" must be text or json`},
		{"missing url", "s3:\n  bucket: b\n", nil, nil, "postgres.url: is required"},
		{"missing bucket", "postgres:\n  url: x\n", nil, nil, "s3.bucket: is required"},
		{"bad endpoint", "postgres:\n  url: x\ns3:\n  bucket: b\n  endpoint: ftp://x\n", nil, nil, `s3: s3store: Endpoint "ftp://x" must be an http:// or https:// URL`},
		{"given twice", required + "s3:\n  prefix: p\n", nil, nil, "line 5: section s3 given twice"},
		{"not yaml", "server: [", nil, nil, "not YAML"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadArgs(t, "agent", tc.yaml, tc.env, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestConfigCompactorChecks: the compactor's cross-setting rules.
func TestConfigCompactorChecks(t *testing.T) {
	_, err := loadArgs(t, "compactor", required+"compactor:\n  grace: 10m\n  orphan_age: 5m\n", nil)
	if err == nil || !strings.Contains(err.Error(), "compactor.orphan_age: 5m0s must be at least compactor.grace (10m0s)") {
		t.Fatalf("orphan_age below grace: %v", err)
	}
	// A section the command does not read is still checked for its keys,
	// not for its values' rules.
	if _, err := loadArgs(t, "compactor", required+"batcher:\n  linger: 1s\n", nil); err != nil {
		t.Fatalf("a batcher section given to the compactor: %v", err)
	}
}

// TestConfigPrecedence: flag > environment > file > default, and older
// environment names still work.
func TestConfigPrecedence(t *testing.T) {
	file := required + "batcher:\n  linger: 100ms\n  max_file_bytes: 2048\n  commit_timeout: 3s\n"
	env := map[string]string{"FLOE_BATCHER_LINGER": "50ms", "FLOE_BATCHER_MAX_FILE_BYTES": "4096", "AWS_REGION": "eu-west-3", "FLOE_S3_PATH_STYLE": "true"}
	c, err := loadArgs(t, "agent", file, env, "-linger", "7ms")
	if err != nil {
		t.Fatal(err)
	}
	def := DefaultServerConfig("agent")
	if c.Batcher.Linger != 7*time.Millisecond || c.Batcher.MaxFileBytes != 4096 || c.Batcher.CommitTimeout != 3*time.Second ||
		c.Batcher.UploadTimeout != def.Batcher.UploadTimeout {
		t.Fatalf("batcher %+v: want linger from the flag, max_file_bytes from env, commit_timeout from the file, upload_timeout default", c.Batcher)
	}
	if c.S3.Region != "eu-west-3" || !c.S3.PathStyle || c.Postgres.URL != "postgres://u:pw@h/db" {
		t.Fatalf("s3 %+v postgres %+v", c.S3, c.Postgres)
	}
	// FLOE_S3_REGION wins over AWS_REGION.
	env["FLOE_S3_REGION"] = "ap-south-1"
	if c, _ = loadArgs(t, "agent", file, env); c.S3.Region != "ap-south-1" {
		t.Fatalf("region %q, want FLOE_S3_REGION's", c.S3.Region)
	}
	// FLOE_CONFIG names the file when -config is absent.
	path := filepath.Join(t.TempDir(), "f.yaml")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err = loadArgs(t, "agent", "", map[string]string{"FLOE_CONFIG": path}); err != nil || c.Batcher.CommitTimeout != 3*time.Second {
		t.Fatalf("FLOE_CONFIG: %v, %+v", err, c.Batcher)
	}
	// dev's own defaults.
	if c, err = loadArgs(t, "dev", "", nil); err != nil || c.Server.Listen != devGRPCAddr {
		t.Fatalf("dev: %v, listen %q", err, c.Server.Listen)
	}
}

// TestConfigPrintMasksSecrets: floe config print hides passwords and the
// secret key, and what it prints reads back as the same configuration.
func TestConfigPrintMasksSecrets(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"postgres://floe:hunter2@db:5432/floe?sslmode=disable", "postgres://floe:*****@db:5432/floe?sslmode=disable"},
		{"postgres://db/floe?user=floe&password=hunter2", "postgres://db/floe?user=floe&password=*****"},
		{"host=db user=floe password=hunter2 dbname=floe", "host=db user=floe password=***** dbname=floe"},
		{"postgres://floe@db/floe", "postgres://floe@db/floe"},
	} {
		if got := maskURL(tc.url); got != tc.want || strings.Contains(got, "hunter2") {
			t.Errorf("maskURL(%q) = %q, want %q", tc.url, got, tc.want)
		}
	}
	c, err := loadArgs(t, "agent", "postgres:\n  url: postgres://floe:hunter2@db/floe\ns3:\n  bucket: b\n  access_key: AK\n  secret_key: s3cr3t\n", nil, "-linger", "40ms")
	if err != nil {
		t.Fatal(err)
	}
	out, err := printConfig(&c, "agent")
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	if strings.Contains(text, "hunter2") || strings.Contains(text, "s3cr3t") || !strings.Contains(text, "secret_key: '*****'") ||
		!strings.Contains(text, "access_key: AK") || !strings.Contains(text, "linger: 40ms") {
		t.Fatalf("printed:\n%s", text)
	}
	back := DefaultServerConfig("agent")
	if err := decodeConfig(&back, out); err != nil {
		t.Fatalf("the printed configuration does not read back: %v", err)
	}
	back.Postgres.URL, back.S3.SecretKey = c.Postgres.URL, c.S3.SecretKey
	if back != c {
		t.Fatalf("read back %+v, want %+v", back, c)
	}
}

// failingStore refuses writes as a bucket policy would.
type failingStore struct {
	objectstore.Store
	putErr error
}

func (f failingStore) Put(context.Context, string, []byte, objectstore.PutOptions) error {
	return f.putErr
}

// TestProbeRefusingBucket: a bucket that refuses writes ends the start
// (permanent), a write that failed for a passing cause is retried.
func TestProbeRefusingBucket(t *testing.T) {
	denied := &objectstore.PermanentError{Err: errors.New("AccessDenied: put refused")}
	err := probeWrites(context.Background(), failingStore{objectstore.NewMemory(), denied})
	var perm *permanentError
	if !errors.As(err, &perm) || !strings.Contains(err.Error(), "write probe") || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("refused write: %v, want a permanent error naming the probe", err)
	}
	err = probeWrites(context.Background(), failingStore{objectstore.NewMemory(), errors.New("503 SlowDown")})
	if err == nil || errors.As(err, &perm) {
		t.Fatalf("transient write failure: %v, want a retryable error", err)
	}
	mem := objectstore.NewMemory()
	if err := probeWrites(context.Background(), mem); err != nil {
		t.Fatal(err)
	}
	n := 0
	_ = mem.List(context.Background(), "", func(objectstore.ObjectInfo) error { n++; return nil })
	if n != 0 {
		t.Fatalf("the probe left %d objects", n)
	}
}

// settingsTable renders every setting as the Markdown table of
// docs/operations.md.
func settingsTable() string {
	var b strings.Builder
	b.WriteString("| setting | flag | environment | default | commands | meaning |\n| --- | --- | --- | --- | --- | --- |\n")
	def := DefaultServerConfig("agent")
	for _, s := range allSettings() {
		d := "`" + s.format(&def) + "`"
		if s.format(&def) == "" {
			d = "(none)"
		}
		var cmds []string
		for _, c := range []string{"agent", "dev", "compactor"} {
			if s.usedBy(c) {
				cmds = append(cmds, c)
			}
		}
		env := "`" + strings.Join(s.envs, "`, `") + "`"
		b.WriteString("| `" + s.name() + "` | `-" + s.flag + "` | " + env + " | " + d + " | " + strings.Join(cmds, ", ") +
			" | " + strings.ReplaceAll(s.help, "|", "\\|") + " |\n")
	}
	return b.String()
}

const (
	settingsBegin = "<!-- settings table: generated by TestSettingsDocumented (FLOE_UPDATE_DOCS=1 rewrites it) -->\n"
	settingsEnd   = "<!-- end of settings table -->\n"
)

// TestSettingsDocumented: docs/operations.md lists every setting, with its
// flag, environment variables and default, exactly as the code has them.
func TestSettingsDocumented(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "operations.md")
	if err := checkGeneratedDoc(path, settingsBegin, settingsEnd, settingsTable(), os.Getenv); err != nil {
		t.Fatalf("%v; run FLOE_UPDATE_DOCS=1 go test -run TestSettingsDocumented ./cmd/floe/ (not under CI). Want:\n%s", err, settingsTable())
	}
}
