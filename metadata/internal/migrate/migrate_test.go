package migrate

import (
	"errors"
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

func TestApply(t *testing.T) {
	ms := []Migration{{1, "0001_a.sql", "A"}, {2, "0002_b.sql", "B"}, {3, "0003_c.sql", "C"}}
	var ran []string
	var recorded []int
	exec := func(q string) error { ran = append(ran, q); return nil }
	record := func(m Migration) error { recorded = append(recorded, m.Version); return nil }
	if err := Apply(ms, 1, exec, record); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ran, "") != "BC" || len(recorded) != 2 || recorded[0] != 2 || recorded[1] != 3 {
		t.Fatalf("ran %v, recorded %v", ran, recorded)
	}
	if err := Apply(ms, 4, exec, record); !errors.Is(err, ErrBadMigration) {
		t.Fatalf("newer database: %v", err)
	}
	boom := errors.New("boom")
	if err := Apply(ms, 0, func(string) error { return boom }, record); !errors.Is(err, boom) {
		t.Fatalf("failing migration: %v", err)
	}
}
