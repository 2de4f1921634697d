//go:build engines

package engines

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/kbatch"
)

// plannedAnswer is what engines/py/pyiceberg_planned.py writes after the
// maintenance.
type plannedAnswer struct {
	Planned      [][2]int64 `json:"planned"`
	PlannedError string     `json:"planned_error"`
	Snapshots    []int64    `json:"snapshots"`
	FilesNow     int        `json:"files_now"`
	Travel       [][2]int64 `json:"travel"`
	TravelError  string     `json:"travel_error"`
}

// TestMaintenanceUnderPlannedScan: pyiceberg plans a scan of a table of
// small files (plan_files), then floe compactor's maintenance rewrites
// them and expires snapshots (-iceberg-rewrite-min-files 1,
// -iceberg-keep-snapshots 1, -iceberg-snapshot-age 0, the default
// -iceberg-orphan-age); pyiceberg then reads the planned files and gets
// every row exactly once, and time travel to the planned snapshot, which
// was superseded within the orphan age, works.
func TestMaintenanceUnderPlannedScan(t *testing.T) {
	py := filepath.Join(need(t, "venv"), "bin", "python")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c := startCluster(t, ctx)
	c.startCompactor(t, ctx) // maintenance off
	const topic = "planned"
	if _, err := c.client.CreateTopic(ctx, topic, 2, map[string]string{"iceberg.lag": "0"}); err != nil {
		t.Fatal(err)
	}
	var want [][2]int64
	next := [2]int64{}
	produce := func(n int) {
		for p := range int32(2) {
			recs := make([]kbatch.Record, n)
			for i := range recs {
				recs[i] = kbatch.Record{Timestamp: time.Now().UnixMilli(), Value: []byte(fmt.Sprintf("v%d-%d", p, i))}
			}
			b, err := kbatch.Encode(recs, kbatch.EncodeOptions{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.client.Log.ProduceBatches(ctx, &floev1.ProduceBatchesRequest{Topic: topic,
				Partitions: []*floev1.PartitionBatches{{Partition: p, Batches: b}}}); err != nil {
				t.Fatal(err)
			}
			for range n {
				want = append(want, [2]int64{int64(p), next[p]})
				next[p]++
			}
		}
		c.waitTables(t, ctx, topic)
	}
	for round := range 5 { // five appends: five small files a partition day
		produce(3 + round)
	}
	planned, produced := len(want), map[[2]int64]bool{}
	for _, r := range want {
		produced[r] = true
	}

	cmd := exec.CommandContext(ctx, py, filepath.Join("py", "pyiceberg_planned.py"))
	cmd.Env = append(os.Environ(), "TZ=UTC", "PYTHONPATH=py")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	job, _ := json.Marshal(map[string]any{
		"catalog": map[string]string{
			"name": "floe", "type": "sql", "init_catalog_tables": "false",
			"uri":         fmt.Sprintf("postgresql+psycopg2://%s:%s@%s/%s", pgUser, pgPassword, c.pgHostPort, pgDatabase),
			"s3.endpoint": c.s3.Endpoint, "s3.access-key-id": s3Access, "s3.secret-access-key": s3Secret, "s3.region": c.s3.Region,
		},
		"namespace": namespace, "table": iceberg.TableName(topic),
	})
	if _, err := fmt.Fprintf(stdin, "%s\n", job); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	line, err := out.ReadBytes('\n')
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, stderr.String())
	}
	var plan struct {
		Snapshot int64 `json:"snapshot"`
		Files    int   `json:"files"`
	}
	if err := json.Unmarshal(line, &plan); err != nil {
		t.Fatalf("plan: %v: %s", err, line)
	}
	t.Logf("planned snapshot %d: %d files", plan.Snapshot, plan.Files)

	// The compactor again, maintaining at every visit.
	c.compactor.Stop(syscall.SIGTERM, 20*time.Second)
	c.startFloe(t, ctx, "compactor", "/healthz", "-interval", "200ms", "-compact-min-age", "1h",
		"-iceberg-maintain-interval", "1ms", "-iceberg-rewrite-min-files", "1", "-iceberg-keep-snapshots", "1",
		"-iceberg-snapshot-age", "0s")
	produce(2) // a visit with an append, then maintenance
	deadline := time.Now().Add(time.Minute)
	for rewritten(t, c.compactorHTTP, topic) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no rewrite within a minute")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	line, err = out.ReadBytes('\n')
	if err != nil {
		t.Fatalf("read after maintenance: %v\n%s", err, stderr.String())
	}
	var a plannedAnswer
	if err := json.Unmarshal(line, &a); err != nil {
		t.Fatalf("read after maintenance: %v: %s", err, line)
	}
	t.Logf("after maintenance: %d snapshots, %d files", len(a.Snapshots), a.FilesNow)
	if a.FilesNow >= plan.Files {
		t.Errorf("maintenance left %d files of %d planned", a.FilesNow, plan.Files)
	}
	for what, got := range map[string]struct {
		rows [][2]int64
		err  string
	}{"the planned files": {a.Planned, a.PlannedError}, "time travel to the planned snapshot": {a.Travel, a.TravelError}} {
		if got.err != "" {
			t.Errorf("%s after maintenance: %s", what, got.err)
			continue
		}
		if len(got.rows) != planned {
			t.Errorf("%s: %d rows, want %d", what, len(got.rows), planned)
			continue
		}
		seen := map[[2]int64]bool{}
		for _, r := range got.rows {
			if !produced[r] || seen[r] {
				t.Errorf("%s: row %v not produced before the plan, or read twice", what, r)
			}
			seen[r] = true
		}
	}
}

// rewritten is floe_iceberg_maintenance_rewritten_files_total of topic's
// table on the compactor's /metrics.
func rewritten(t *testing.T, addr, topic string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "floe_iceberg_maintenance_rewritten_files_total{") && strings.Contains(l, `topic="`+topic+`"`) {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return v
		}
	}
	return 0
}
