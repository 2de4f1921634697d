//go:build engines

package engines

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/iceberg"
)

// Spark's jars, from Maven Central (engines/setup.sh).
var sparkJars = []string{
	"iceberg-spark-runtime-3.5_2.12-1.10.0.jar",
	"iceberg-aws-bundle-1.10.0.jar",
	"postgresql-42.7.4.jar",
	"sqlite-jdbc-3.46.1.3.jar",
}

const java17 = "/usr/lib/jvm/java-17-openjdk-amd64"

// shipped returns a file of deploy/ with the compose hosts and ports
// (postgres:5432, s3:7000, compactor:7072) replaced by the suite's:
// nothing else of it changes.
func (c *cluster) shipped(t *testing.T, rel string) string {
	t.Helper()
	s, err := c.shippedText(rel)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (c *cluster) shippedText(rel string) (string, error) {
	b, err := os.ReadFile(filepath.Join("..", "deploy", rel))
	if err != nil {
		return "", err
	}
	s := string(b)
	n := 0
	for _, r := range [][2]string{{"postgres:5432", c.pgHostPort}, {"http://s3:7000", c.s3.Endpoint}, {"compactor:7072", c.compactorHTTP}} {
		n += strings.Count(s, r[0])
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	if n == 0 {
		return "", fmt.Errorf("deploy/%s names none of the compose hosts", rel)
	}
	return s, nil
}

func (f *fixture) sparkEnv(t *testing.T) (jars []string, env []string) {
	t.Helper()
	for _, j := range sparkJars {
		jars = append(jars, need(t, filepath.Join("jars", j)))
	}
	py := filepath.Join(need(t, "venv"), "bin", "python")
	return jars, []string{"JAVA_HOME=" + java17, "PYSPARK_PYTHON=" + py, "SPARK_LOCAL_IP=127.0.0.1"}
}

// spark: pyspark with the shipped spark-defaults.conf: every table read
// with Iceberg's vectorized Parquet reader off (all columns) and on (the
// flat ones: it reads no nested column), the count per day, the one-day
// filter, snapshots, history and time travel; and a query loop while the
// compactor appends to the live table, whose every count must be a
// snapshot's total (never part of a commit).
func (f *fixture) spark(t *testing.T, ctx context.Context) {
	c := f.c
	jars, env := f.sparkEnv(t)
	var confs []string
	for _, name := range []string{"spark-defaults.conf", "spark-rest.conf"} {
		conf := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(conf, []byte(c.shipped(t, "spark/"+name)), 0o644); err != nil {
			t.Fatal(err)
		}
		confs = append(confs, conf)
	}
	const liveSeconds = 8
	job := map[string]any{
		"conf_files": confs, "jars": jars, "catalog": "floe", "namespace": namespace,
		"rest":   map[string]any{"catalog": "floe_rest", "namespace": namespace, "tables": f.tables},
		"tables": f.tables, "filter": f.dayFilter(), "snapshots_table": f.events,
		"live": map[string]any{"table": iceberg.TableName(liveTopic), "seconds": liveSeconds, "queries": 4},
	}
	// Appends to the live table while Spark queries it: a batch every
	// 300 ms from when Spark is likely up until the loop's end.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(7, 7))
		tick := time.NewTicker(300 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			recs := f.ds.rawRecords(rng, 5, i*5)
			f.ds.produceQuiet(ctx, c, liveTopic, int32(i%2), recs)
		}
	}()
	a := runPy(t, ctx, "spark_read.py", job, env...)
	close(stop)
	wg.Wait()
	f.check(t, "spark", a, f.allTables)
	f.checkLive(t, "spark", a.Live)
}

// checkLive: every count a query returned during the appends is the
// total of a snapshot, with no duplicate; and the appends did land
// during the loop (more than one count).
func (f *fixture) checkLive(t *testing.T, engine string, l *liveAnswer) {
	t.Helper()
	if l == nil {
		t.Errorf("%s: no live answer", engine)
		f.m.set(engine, "query-during-append", false)
		return
	}
	ok := true
	distinct := map[int64]bool{}
	for _, cn := range l.Counts {
		distinct[cn[0]] = true
		if cn[0] != cn[1] || !slices.Contains(l.Totals, cn[0]) {
			t.Errorf("%s: a query during appends counted %d rows (%d distinct offsets); snapshot totals %v", engine, cn[0], cn[1], l.Totals)
			ok = false
		}
	}
	if len(distinct) < 2 {
		t.Errorf("%s: %d queries during appends saw %d snapshot(s): the appends did not overlap", engine, len(l.Counts), len(distinct))
		ok = false
	}
	t.Logf("%s: %d queries during appends saw %d snapshots", engine, len(l.Counts), len(distinct))
	f.m.set(engine, "query-during-append", ok)
}
