// Package migrate reads the versioned schema migrations that the metadata
// backends embed: files named NNNN_description.sql, applied in version order.
//
// Applied migrations are immutable: each is recorded with the SHA-256 of
// its SQL, and a database whose applied migration no longer matches the
// binary's file is refused (a change comes as a new migration).
package migrate

import (
	"crypto/sha256"
	"encoding/hex"
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

// ErrChanged reports an applied migration whose SQL is not the binary's.
var ErrChanged = errors.New("migrate: applied migration changed")

// Migration is one schema step.
type Migration struct {
	Version  int
	Name     string // file name
	SQL      string
	Checksum string // Checksum(SQL)
}

// Applied is a migration as the database recorded it.
type Applied struct {
	Version  int
	Name     string
	Checksum string // "" when recorded before checksums were
}

// Checksum is the hex SHA-256 of a migration's SQL.
func Checksum(sql string) string {
	sum := sha256.Sum256([]byte(sql))
	return hex.EncodeToString(sum[:])
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
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b), Checksum: Checksum(string(b))})
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

// Apply checks the applied migrations against ms, then runs, in order, the
// migrations of ms past the highest applied one: exec runs a migration's SQL
// and record notes it as applied (with its checksum), backfill stores the
// checksum of an applied migration recorded without one; all three run in
// the caller's transaction. A database newer than ms is refused, and so is
// an applied migration whose checksum (or name) differs from ms's: it was
// edited after it was applied (ErrChanged, naming the file).
func Apply(ms []Migration, applied []Applied, exec func(sql string) error, record, backfill func(Migration) error) error {
	current := 0
	for _, a := range applied {
		current = max(current, a.Version)
	}
	if current > len(ms) {
		return fmt.Errorf("%w: schema version %d is newer than this binary's %d", ErrBadMigration, current, len(ms))
	}
	for _, a := range applied {
		if a.Version < 1 {
			return fmt.Errorf("%w: applied version %d", ErrBadMigration, a.Version)
		}
		m := ms[a.Version-1]
		switch {
		case a.Name != m.Name:
			return fmt.Errorf("%w: version %d was applied as %s, this binary has %s", ErrChanged, a.Version, a.Name, m.Name)
		case a.Checksum == "":
			if err := backfill(m); err != nil {
				return fmt.Errorf("record checksum of %s: %w", m.Name, err)
			}
		case a.Checksum != m.Checksum:
			return fmt.Errorf("%w: %s was edited after it was applied (sha256 %s applied, %s in this binary); "+
				"applied migrations are immutable, changes come as new migrations", ErrChanged, m.Name, a.Checksum, m.Checksum)
		}
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
