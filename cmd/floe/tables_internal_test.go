package main

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/floe-broker/floe/iceberg"
	"github.com/floe-broker/floe/internal/testenv"
	"github.com/floe-broker/floe/tableread"
)

// TestAgentReadsTheCompactorsTables: floe agent takes the iceberg
// namespace, catalog and prefix floe compactor writes with (file, and
// flags), so that it finds the tables of a non-default namespace; the
// compactor-only settings stay the compactor's.
func TestAgentReadsTheCompactorsTables(t *testing.T) {
	file := "postgres:\n  url: postgres://u:pw@h/db\n" + "s3:\n  bucket: b\n  prefix: log\n" +
		"iceberg:\n  namespace: analytics\n  catalog: lake\n  prefix: tables\n"
	ag, err := loadArgs(t, "agent", file, nil)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := loadArgs(t, "compactor", file, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, c := ag.tablesConfig(), comp.tablesConfig()
	if !reflect.DeepEqual(a, c) {
		t.Fatalf("agent's catalog %+v, compactor's %+v", a, c)
	}
	if a.Options.Namespace != "analytics" || a.CatalogName != "lake" || a.Warehouse != "s3://b/log/tables" {
		t.Fatalf("agent's catalog %+v: want namespace analytics, catalog lake, warehouse s3://b/log/tables", a)
	}
	// The flags too.
	ag, err = loadArgs(t, "agent", required, nil, "-iceberg-namespace", "other", "-iceberg-prefix", "p")
	if err != nil {
		t.Fatal(err)
	}
	if cfg := ag.tablesConfig(); cfg.Options.Namespace != "other" || cfg.Warehouse != "s3://b/p" {
		t.Fatalf("agent's catalog of the flags: %+v", cfg)
	}
	// A bad namespace is refused at start, naming the setting.
	if _, err := loadArgs(t, "agent", required, nil, "-iceberg-namespace", "a.b"); err == nil || !strings.Contains(err.Error(), "iceberg.namespace") {
		t.Fatalf("a dotted namespace: %v", err)
	}
	for _, s := range commandSettings("agent") {
		if s.section == "iceberg" && s.key != "namespace" && s.key != "catalog" && s.key != "prefix" {
			t.Errorf("floe agent reads %s: only the tables' location is the agent's", s.name())
		}
	}
}

// TestAgentTablesOpenLazily: the agent's table reader opens no catalog
// at start, so an agent whose catalog is down starts; a table read then
// is tableread.ErrUnavailable, promptly.
func TestAgentTablesOpenLazily(t *testing.T) {
	cfg := iceberg.DefaultPostgresConfig("postgres://floe:floe@"+testenv.DeadAddr+"/floe?connect_timeout=2", "b")
	r, closeTables, err := openTables(cfg, DefaultServerConfig("agent").Agent.tableConfig(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("open the table reader with the catalog down: %v", err)
	}
	defer closeTables()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, _, err = r.ReadOwned(ctx, "t", 0, 0, 10, 1<<20)
	if !errors.Is(err, tableread.ErrUnavailable) || ctx.Err() != nil {
		t.Fatalf("read with the catalog down: %v, want ErrUnavailable", err)
	}
}

// TestAgentTablesRideOutPostgresRestart: PostgreSQL restarting (fast
// shutdown, then up again) at several moments of the agent's first table
// read, while the lazy catalog opens (connect, the catalog's lock and
// tables, iceberg-go's schema check), leaves the reader working: that read
// is answered, at worst tableread.ErrUnavailable, within its deadline, and
// once the server is back the reads are answered by the catalog (here: no
// table yet) without an agent restart.
func TestAgentTablesRideOutPostgresRestart(t *testing.T) {
	for i, delay := range []time.Duration{0, 5 * time.Millisecond, 20 * time.Millisecond, 60 * time.Millisecond} {
		cfg := iceberg.DefaultPostgresConfig(testenv.Postgres(t), "b")
		r, closeTables, err := openTables(cfg, DefaultServerConfig("agent").Agent.tableConfig(), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		first := make(chan error, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		go func() {
			_, _, err := r.ReadOwned(ctx, "t", 0, 0, 10, 1<<20)
			first <- err
		}()
		time.Sleep(delay)
		restart := testenv.StopPostgres(t)
		time.Sleep(200 * time.Millisecond)
		restart()
		if err := <-first; err != nil && (!errors.Is(err, tableread.ErrUnavailable) || ctx.Err() != nil) {
			t.Fatalf("restart %d: the read during the restart: %v, want an answer or ErrUnavailable within its deadline", i, err)
		}
		for {
			_, _, err = r.ReadOwned(ctx, "t", 0, 0, 10, 1<<20)
			if !errors.Is(err, tableread.ErrUnavailable) || ctx.Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond) // the lazy catalog tries again after its retry interval
		}
		cancel()
		if err != nil && (errors.Is(err, tableread.ErrUnavailable) || ctx.Err() != nil) {
			t.Fatalf("restart %d: reads once PostgreSQL is back: %v", i, err)
		}
		closeTables()
	}
}
