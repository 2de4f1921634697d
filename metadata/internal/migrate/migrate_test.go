package migrate

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0002_b.sql":   {Data: []byte("B")},
		"m/0001_a.sql":   {Data: []byte("A")},
		"m/README.md":    {Data: []byte("ignored")},
		"m/0003_c.sql":   {Data: []byte("C")},
		"gap/0001_a.sql": {Data: []byte("A")},
		"gap/0003_c.sql": {Data: []byte("C")},
		"bad/first.sql":  {Data: []byte("X")},
		"dup/0001_a.sql": {Data: []byte("A")},
		"dup/001_b.sql":  {Data: []byte("B")},
	}
	ms, err := Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[0].SQL != "A" || ms[2].Version != 3 || ms[1].Name != "0002_b.sql" {
		t.Errorf("Load = %+v", ms)
	}
	for _, dir := range []string{"gap", "bad", "dup", "empty"} {
		if _, err := Load(fsys, dir); err == nil {
			t.Errorf("Load(%s) succeeded", dir)
		} else if dir != "empty" && !errors.Is(err, ErrBadMigration) {
			t.Errorf("Load(%s) = %v, want ErrBadMigration", dir, err)
		}
	}
}

func migrations(sqls ...string) []Migration {
	var ms []Migration
	for i, q := range sqls {
		ms = append(ms, Migration{Version: i + 1, Name: fmt.Sprintf("%04d_%c.sql", i+1, 'a'+i), SQL: q, Checksum: Checksum(q)})
	}
	return ms
}

func applied(ms []Migration) []Applied {
	var as []Applied
	for _, m := range ms {
		as = append(as, Applied{m.Version, m.Name, m.Checksum})
	}
	return as
}

func TestApply(t *testing.T) {
	ms := migrations("A", "B", "C")
	var ran []string
	var recorded, backfilled []int
	exec := func(q string) error { ran = append(ran, q); return nil }
	record := func(m Migration) error { recorded = append(recorded, m.Version); return nil }
	backfill := func(m Migration) error { backfilled = append(backfilled, m.Version); return nil }
	if err := Apply(ms, applied(ms[:1]), exec, record, backfill); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ran, "") != "BC" || len(recorded) != 2 || recorded[0] != 2 || recorded[1] != 3 || len(backfilled) != 0 {
		t.Fatalf("ran %v, recorded %v, backfilled %v", ran, recorded, backfilled)
	}
	newer := append(applied(ms), Applied{4, "0004_d.sql", Checksum("D")})
	if err := Apply(ms, newer, exec, record, backfill); !errors.Is(err, ErrBadMigration) {
		t.Fatalf("newer database: %v", err)
	}
	boom := errors.New("boom")
	if err := Apply(ms, nil, func(string) error { return boom }, record, backfill); !errors.Is(err, boom) {
		t.Fatalf("failing migration: %v", err)
	}
}

// TestApplyChecksums: rows recorded before checksums get theirs; an applied
// migration whose SQL changed is refused with an error naming its file.
func TestApplyChecksums(t *testing.T) {
	ms := migrations("A", "B", "C")
	var ran []string
	var backfilled []int
	exec := func(q string) error { ran = append(ran, q); return nil }
	record := func(Migration) error { return nil }
	backfill := func(m Migration) error { backfilled = append(backfilled, m.Version); return nil }

	old := applied(ms[:2])
	old[0].Checksum, old[1].Checksum = "", ""
	if err := Apply(ms, old, exec, record, backfill); err != nil {
		t.Fatal(err)
	}
	if len(backfilled) != 2 || backfilled[0] != 1 || backfilled[1] != 2 || strings.Join(ran, "") != "C" {
		t.Fatalf("backfilled %v, ran %v", backfilled, ran)
	}

	ran = nil
	edited := migrations("A", "B edited", "C")
	err := Apply(edited, applied(ms[:2]), exec, record, backfill)
	if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "0002_b.sql") {
		t.Fatalf("edited applied migration: %v, want ErrChanged naming 0002_b.sql", err)
	}
	if len(ran) != 0 {
		t.Fatalf("ran %v after refusing", ran)
	}
	renamed := applied(ms[:1])
	renamed[0].Name = "0001_other.sql"
	if err := Apply(ms, renamed, exec, record, backfill); !errors.Is(err, ErrChanged) {
		t.Fatalf("renamed applied migration: %v, want ErrChanged", err)
	}
}
