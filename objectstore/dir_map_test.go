package objectstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Under WithMapping, the directory store maps a whole-file Get (its bytes
// are the file's, its release handed over once) and reads a short range;
// writes to the mapped bytes never reach the file (copy-on-write); a
// mapping outlives a Delete.
func TestDirGetMapped(t *testing.T) {
	ctx := context.Background()
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, MinMappedBytes+12345)
	for i := range data {
		data[i] = byte(i * 31)
	}
	if err := d.Put(ctx, "a/f", data, PutOptions{}); err != nil {
		t.Fatal(err)
	}
	var releases []func()
	mctx := WithMapping(ctx, func(release func()) { releases = append(releases, release) })

	got, err := d.Get(mctx, "a/f", 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(releases) != 1 {
		t.Fatalf("whole-file Get handed %d releases, want 1 (not mapped?)", len(releases))
	}
	if !bytes.Equal(got, data) {
		t.Fatal("mapped bytes differ from the file's")
	}
	// A range from an offset inside a page, as long as the mapping minimum.
	off := int64(4097)
	part, err := d.Get(mctx, "a/f", off, MinMappedBytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(releases) != 2 || !bytes.Equal(part, data[off:off+MinMappedBytes]) {
		t.Fatalf("range of %d bytes at %d: %d releases, equal %v", MinMappedBytes, off, len(releases), bytes.Equal(part, data[off:off+MinMappedBytes]))
	}
	short, err := d.Get(mctx, "a/f", 0, MinMappedBytes-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(releases) != 2 || !bytes.Equal(short, data[:MinMappedBytes-1]) {
		t.Fatalf("short range: %d releases (want 2: read, not mapped)", len(releases))
	}

	got[0] ^= 0xff // private: the file keeps its byte
	onDisk, err := os.ReadFile(filepath.Join(d.root, "a", "f"))
	if err != nil {
		t.Fatal(err)
	}
	if onDisk[0] != data[0] {
		t.Fatal("a write to the mapped bytes reached the file")
	}
	if err := d.Delete(ctx, "a/f"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[1:], data[1:]) {
		t.Fatal("mapped bytes changed after the Delete")
	}
	for _, r := range releases {
		r()
	}

	// Without WithMapping, nothing is mapped.
	if err := d.Put(ctx, "b", data, PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, "b", 0, -1); err != nil {
		t.Fatal(err)
	}
	if len(releases) != 2 {
		t.Fatalf("a Get without WithMapping handed a release")
	}
}
