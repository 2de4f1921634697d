//go:build engines

package engines

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floe-broker/floe/client"
	"github.com/floe-broker/floe/internal/services"
)

// devPlaceholder is the -data folder the docs' and deploy/spark's floe
// dev commands name.
const devPlaceholder = "/tmp/floe-dev"

// TestDevTables: `floe dev`'s tables (SQLite catalog, file:// warehouse)
// read by pyiceberg (SqlCatalog on the SQLite file) and Spark (the JDBC
// catalog on it, deploy/spark/spark-dev.conf), and the pyiceberg snippet
// of docs/engines.md as written.
func TestDevTables(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	data := t.TempDir()
	logPath, addrFile := filepath.Join(t.TempDir(), "dev.log"), filepath.Join(t.TempDir(), "dev.addrs")
	p, err := services.Start(services.ProcessSpec{Path: floeBin, LogPath: logPath,
		Args: []string{"dev", "-data", data, "-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0", "-addr-file", addrFile,
			"-kafka-listen", "127.0.0.1:0", "-interval", "200ms", "-linger", "20ms"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(syscall.SIGTERM, 20*time.Second)
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("floe dev log:\n%s", tail(b, 6000))
		}
	})
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	bound, err := services.WaitFloe(wctx, p, addrFile, "/readyz", nil)
	if err != nil {
		t.Fatal(err)
	}
	listen, metrics := bound.GRPC, bound.Metrics
	c := &cluster{agent: listen}
	if c.client, err = client.Dial(listen); err != nil {
		t.Fatal(err)
	}
	defer c.client.Close()
	if _, err := c.client.CreateTopic(ctx, "orders", 2, map[string]string{"iceberg.lag": "0"}); err != nil {
		t.Fatal(err)
	}
	ds := newDataset()
	rng := rand.New(rand.NewPCG(3, 3))
	for part := range int32(2) {
		ds.produce(t, ctx, c, "orders", "orders", part, ds.rawRecords(rng, 20, 20*int(part)), nil)
	}
	c.waitTables(t, ctx, "orders")
	f := &fixture{c: c, ds: ds, tables: []string{"orders"}, allTables: []string{"orders"}, events: "orders",
		m: &matrix{res: map[string]map[string]string{}}}

	t.Run("pyiceberg", func(t *testing.T) {
		job := map[string]any{
			"catalog": map[string]string{"name": "floe", "type": "sql", "uri": "sqlite:///" + filepath.Join(data, "iceberg.db"),
				"warehouse": "file://" + filepath.Join(data, "warehouse"), "init_catalog_tables": "false"},
			"namespace": namespace, "tables": f.tables,
		}
		f.check(t, "dev-pyiceberg", runPy(t, ctx, "pyiceberg_read.py", job), f.allTables)
		// floe dev's REST catalog, on its HTTP listener.
		job["catalog"] = map[string]string{"name": "floe", "type": "rest", "uri": "http://" + metrics + "/iceberg"}
		f.check(t, "dev-pyiceberg-rest", runPy(t, ctx, "pyiceberg_read.py", job), f.allTables)
	})
	t.Run("docs", func(t *testing.T) {
		// The pyiceberg snippet of docs/engines.md, with only the -data
		// folder replaced, prints the table's rows.
		snippet := docSnippet(t, "dev-pyiceberg")
		py := filepath.Join(need(t, "venv"), "bin", "python")
		cmd := exec.CommandContext(ctx, py, "-c", strings.ReplaceAll(snippet, devPlaceholder, data))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("docs/engines.md snippet: %v\n%s", err, errb.String())
		}
		if got, want := strings.TrimSpace(out.String()), "40"; !strings.HasSuffix(got, want) {
			t.Errorf("docs/engines.md snippet printed %q, want it to end with the row count %s", got, want)
		}
	})
	t.Run("spark", func(t *testing.T) {
		b, err := os.ReadFile("../deploy/spark/spark-dev.conf")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), devPlaceholder) {
			t.Fatalf("deploy/spark/spark-dev.conf does not name %s", devPlaceholder)
		}
		conf := filepath.Join(t.TempDir(), "spark-dev.conf")
		if err := os.WriteFile(conf, []byte(strings.ReplaceAll(string(b), devPlaceholder, data)), 0o644); err != nil {
			t.Fatal(err)
		}
		jars, env := f.sparkEnv(t)
		job := map[string]any{"conf_files": []string{conf}, "jars": jars, "catalog": "floe", "namespace": namespace,
			"tables": f.tables}
		f.check(t, "dev-spark", runPy(t, ctx, "spark_read.py", job, env...), f.allTables)
	})
	t.Logf("engine × check:\n%s", f.m)
}

// docSnippet returns the fenced code block of docs/engines.md that
// follows the comment <!-- engines: NAME -->.
func docSnippet(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../docs/engines.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- engines: " + regexp.QuoteMeta(name) + " -->\\s*```[a-z]*\\n(.*?)```")
	m := re.FindSubmatch(b)
	if m == nil {
		t.Fatalf("docs/engines.md has no code block after <!-- engines: %s -->", name)
	}
	return string(m[1])
}
