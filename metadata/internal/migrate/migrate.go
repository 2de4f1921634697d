// Package migrate reads the versioned schema migrations that the metadata
// backends embed: files named NNNN_description.sql, applied in version order.
package migrate

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// ErrBadMigration reports a malformed migration set.
var ErrBadMigration = errors.New("migrate: bad migration")

// Migration is one schema step.
type Migration struct {
	Version int
	Name    string // file name
	SQL     string
}

// Load reads every *.sql file of dir in fsys, ordered by version. Versions
// must be unique and start at 1 without gaps.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrate: read %s: %w", dir, err)
	}
	var ms []Migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("%w: %s is not named NNNN_description.sql", ErrBadMigration, e.Name())
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrate: read %s: %w", e.Name(), err)
		}
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i, m := range ms {
		if m.Version != i+1 {
			return nil, fmt.Errorf("%w: %s has version %d, want %d", ErrBadMigration, m.Name, m.Version, i+1)
		}
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("%w: no migrations in %s", ErrBadMigration, dir)
	}
	return ms, nil
}

// Apply runs, in order, the migrations of ms past version current (the
// highest applied one): exec runs a migration's SQL and record notes it as
// applied, both in the caller's transaction. A database newer than ms is
// refused.
func Apply(ms []Migration, current int, exec func(sql string) error, record func(Migration) error) error {
	if current > len(ms) {
		return fmt.Errorf("%w: schema version %d is newer than this binary's %d", ErrBadMigration, current, len(ms))
	}
	for _, m := range ms[current:] {
		if err := exec(m.SQL); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if err := record(m); err != nil {
			return fmt.Errorf("record migration %s: %w", m.Name, err)
		}
	}
	return nil
}
