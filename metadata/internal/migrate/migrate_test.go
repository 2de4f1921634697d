package migrate

import (
	"errors"
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
