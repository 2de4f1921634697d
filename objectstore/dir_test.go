package objectstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/floe-broker/floe/objectstore"
)

func newDir(t *testing.T, root string) *objectstore.Dir {
	t.Helper()
	d, err := objectstore.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDirRejectsBadKeys(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	d := newDir(t, root)
	ctx := t.Context()
	bad := []string{"", "/abs", "a//b", "a/", "..", "../escape", "a/../../b", "a/./b", ".", "a\\b", "a\x00b", "a/.floe-tmp-123"}
	for _, key := range bad {
		if err := d.Put(ctx, key, []byte("x"), objectstore.PutOptions{}); err == nil {
			t.Errorf("Put(%q) succeeded, want an error", key)
		}
		if _, err := d.Get(ctx, key, 0, -1); err == nil || errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want a key error", key, err)
		}
		if _, err := d.Head(ctx, key); err == nil || errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("Head(%q) = %v, want a key error", key, err)
		}
		if err := d.Delete(ctx, key); err == nil {
			t.Errorf("Delete(%q) succeeded, want an error", key)
		}
	}
	// Nothing escaped the root.
	parent := filepath.Dir(root)
	if _, err := os.Stat(filepath.Join(parent, "escape")); err == nil {
		t.Errorf("a file was written outside the root")
	}
	for _, good := range []string{"a", "a/b/c", ".hidden", "a/.b", "a..b", "...", "x/y.z"} {
		if err := newDir(t, t.TempDir()).Put(ctx, good, []byte("x"), objectstore.PutOptions{}); err != nil {
			t.Errorf("Put(%q) = %v, want nil", good, err)
		}
	}
}

func TestDirLayoutAndTempFiles(t *testing.T) {
	root := t.TempDir()
	d := newDir(t, root)
	ctx := t.Context()
	if err := d.Put(ctx, "v1/files/ab/obj", []byte("payload"), objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "v1/files/ab/obj2", []byte("p2"), objectstore.PutOptions{IfAbsent: true}); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(ctx, "v1/files/ab/obj2", []byte("p3"), objectstore.PutOptions{IfAbsent: true}); !errors.Is(err, objectstore.ErrExists) {
		t.Fatalf("if-absent Put = %v, want ErrExists", err)
	}
	got, err := os.ReadFile(filepath.Join(root, "v1", "files", "ab", "obj"))
	if err != nil || string(got) != "payload" {
		t.Fatalf("file on disk = %q, %v", got, err)
	}
	// No temporary file is left behind by puts, failed or not.
	entries, err := os.ReadDir(filepath.Join(root, "v1", "files", "ab"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if fmt.Sprint(names) != "[obj obj2]" {
		t.Errorf("directory holds %v, want [obj obj2]", names)
	}
	// A temporary file left by a crash is not listed.
	if err := os.WriteFile(filepath.Join(root, "v1", "files", "ab", ".floe-tmp-999"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	var listed []string
	if err := d.List(ctx, "", func(info objectstore.ObjectInfo) error {
		listed = append(listed, info.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(listed) != "[v1/files/ab/obj v1/files/ab/obj2]" {
		t.Errorf("List = %v", listed)
	}
}

func TestDirKeyPrefixConflict(t *testing.T) {
	d := newDir(t, t.TempDir())
	ctx := t.Context()
	if err := d.Put(ctx, "a/b", []byte("x"), objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	// "a" is a directory here, so it cannot be an object too.
	for _, opts := range []objectstore.PutOptions{{}, {IfAbsent: true}} {
		err := d.Put(ctx, "a", []byte("y"), opts)
		if err == nil || errors.Is(err, objectstore.ErrExists) {
			t.Errorf("Put(a, %+v) over a prefix directory = %v, want a plain error", opts, err)
		}
	}
	if _, err := d.Head(ctx, "a"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("Head(a) = %v, want ErrNotFound", err)
	}
	if err := d.Delete(ctx, "a"); err != nil {
		t.Errorf("Delete(a) = %v", err)
	}
	if _, err := d.Head(ctx, "a/b"); err != nil {
		t.Errorf("Delete(a) removed a/b: %v", err)
	}
	if err := d.Put(ctx, "a/b/c", []byte("z"), objectstore.PutOptions{}); err == nil {
		t.Errorf("Put(a/b/c) under the object a/b succeeded, want an error")
	}
}

// Two Dir values on one root, as two processes would have, still let
// exactly one if-absent put win.
func TestDirIfAbsentAcrossInstances(t *testing.T) {
	root := t.TempDir()
	stores := []*objectstore.Dir{newDir(t, root), newDir(t, root), newDir(t, root), newDir(t, root)}
	ctx := t.Context()
	for round := range 20 {
		key := fmt.Sprintf("x/%d", round)
		var wg sync.WaitGroup
		errs := make([]error, 16)
		start := make(chan struct{})
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = stores[i%len(stores)].Put(ctx, key, bytes.Repeat([]byte{byte(i)}, 4096), objectstore.PutOptions{IfAbsent: true})
			}()
		}
		close(start)
		wg.Wait()
		winners := 0
		winner := 0
		for i, err := range errs {
			if err == nil {
				winners++
				winner = i
			} else if !errors.Is(err, objectstore.ErrExists) {
				t.Fatalf("round %d writer %d: %v", round, i, err)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d winners, want 1", round, winners)
		}
		got, err := stores[0].Get(ctx, key, 0, -1)
		if err != nil || !bytes.Equal(got, bytes.Repeat([]byte{byte(winner)}, 4096)) {
			t.Fatalf("round %d: object does not hold the winner's data (err %v)", round, err)
		}
	}
	// No temporary files remain.
	err := filepath.WalkDir(root, func(path string, e os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(e.Name(), ".floe-tmp-") {
			t.Errorf("leftover temporary file %s", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Readers see the old or the new contents in full, never a mix.
func TestDirOverwriteIsAtomic(t *testing.T) {
	d := newDir(t, t.TempDir())
	ctx := t.Context()
	a, b := bytes.Repeat([]byte{'a'}, 256<<10), bytes.Repeat([]byte{'b'}, 256<<10)
	if err := d.Put(ctx, "k", a, objectstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			data := a
			if i%2 == 0 {
				data = b
			}
			if err := d.Put(ctx, "k", data, objectstore.PutOptions{}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for range 200 {
		got, err := d.Get(ctx, "k", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("read a torn object")
		}
	}
	close(done)
	wg.Wait()
}

func TestNewDirFailsOnFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := objectstore.NewDir(f); err == nil {
		t.Fatal("NewDir on a regular file succeeded")
	}
}
