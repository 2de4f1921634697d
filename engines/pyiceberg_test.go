//go:build engines

package engines

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// pyiceberg: SqlCatalog on floe's PostgreSQL (the tables floe's
// compactor created: the catalog is told not to create its own), the
// warehouse on MinIO, every table scanned to Arrow.
func (f *fixture) pyiceberg(t *testing.T, ctx context.Context) {
	c := f.c
	job := map[string]any{
		"catalog": map[string]string{
			"name":                 "floe",
			"type":                 "sql",
			"uri":                  fmt.Sprintf("postgresql+psycopg2://%s:%s@%s/%s", pgUser, pgPassword, c.pgHostPort, pgDatabase),
			"init_catalog_tables":  "false",
			"s3.endpoint":          c.s3.Endpoint,
			"s3.access-key-id":     s3Access,
			"s3.secret-access-key": s3Secret,
			"s3.region":            c.s3.Region,
		},
		"namespace":       namespace,
		"tables":          f.tables,
		"filter":          f.dayFilter(),
		"snapshots_table": f.events,
	}
	f.check(t, "pyiceberg", runPy(t, ctx, "pyiceberg_read.py", job), f.allTables)

	// The same through floe's REST catalog: no PostgreSQL credentials.
	job["catalog"] = map[string]string{
		"name":                 "floe_rest",
		"type":                 "rest",
		"uri":                  "http://" + c.compactorHTTP + "/iceberg",
		"s3.endpoint":          c.s3.Endpoint,
		"s3.access-key-id":     s3Access,
		"s3.secret-access-key": s3Secret,
		"s3.region":            c.s3.Region,
	}
	f.check(t, "pyiceberg-rest", runPy(t, ctx, "pyiceberg_read.py", job), f.allTables)
}

// duckdb: iceberg_scan of each table's current metadata file on MinIO,
// with DuckDB's httpfs, avro and iceberg extensions from PyPI.
func (f *fixture) duckdb(t *testing.T, ctx context.Context) {
	c := f.c
	job := map[string]any{
		"s3": map[string]string{"endpoint": strings.TrimPrefix(c.s3.Endpoint, "http://"), "key": s3Access,
			"secret": s3Secret, "region": c.s3.Region},
		"metadata":        f.metadata(t, ctx),
		"filter":          f.dayFilter(),
		"snapshots_table": f.events,
		"rest":            map[string]any{"uri": "http://" + c.compactorHTTP + "/iceberg", "namespace": namespace, "tables": f.tables},
	}
	f.check(t, "duckdb", runPy(t, ctx, "duckdb_read.py", job), f.allTables)
}

// metadata returns the current metadata file of each of the dataset's
// tables.
func (f *fixture) metadata(t *testing.T, ctx context.Context) map[string]string {
	t.Helper()
	all := f.c.metadataLocations(t, ctx)
	out := map[string]string{}
	for _, name := range f.tables {
		if all[name] == "" {
			t.Fatalf("table %s: no metadata location in the catalog (%v)", name, all)
		}
		out[name] = all[name]
	}
	return out
}
