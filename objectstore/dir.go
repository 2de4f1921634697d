package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// tmpPrefix starts the names of Dir's temporary files. List skips them and
// keys may not contain a segment starting with it.
const tmpPrefix = ".floe-tmp-"

// Dir is a Store on a local directory, floe's embedded default. A key maps
// to the file root/key (its "/" separated segments become directories).
//
// Writes are atomic and durable: data goes to a temporary file in the
// target directory, is fsynced, then renamed (or, for IfAbsent, hard-linked,
// which fails if the name exists) into place, and the directory is fsynced.
// Several Dir values, even in several processes, may share one root.
//
// Because segments are directories, a key cannot also be a prefix-directory
// of another key ("a" and "a/b" cannot both exist); Put reports an error for
// the second. Temporary files left by a crash are named ".floe-tmp-*" and
// are ignored.
type Dir struct {
	root string
}

var _ Store = (*Dir)(nil)

// NewDir returns a store rooted at root, creating the directory if needed.
func NewDir(root string) (*Dir, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("objectstore: directory root %q: %w", root, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("objectstore: create directory root: %w", err)
	}
	return &Dir{root: abs}, nil
}

// validateDirKey reports whether key can be stored in a Dir: it must be
// non-empty, must not start or end with "/", must not hold empty, "." or
// ".." segments, NUL bytes or backslashes, and no segment may start with
// ".floe-tmp-".
func validateDirKey(key string) error {
	if key == "" {
		return errEmptyKey
	}
	if strings.ContainsAny(key, "\x00\\") {
		return fmt.Errorf("objectstore: invalid key %q: contains NUL or backslash", key)
	}
	for _, seg := range strings.Split(key, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("objectstore: invalid key %q: empty path segment", key)
		case seg == "." || seg == "..":
			return fmt.Errorf("objectstore: invalid key %q: %q segment", key, seg)
		case strings.HasPrefix(seg, tmpPrefix):
			return fmt.Errorf("objectstore: invalid key %q: segment starts with reserved %q", key, tmpPrefix)
		}
	}
	return nil
}

func (d *Dir) path(key string) (string, error) {
	if err := validateDirKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// isNotFound reports errors meaning "no such file": a missing file or a
// path component that is a file, not a directory.
func isNotFound(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// Put implements Store.
func (d *Dir) Put(ctx context.Context, key string, data []byte, opts PutOptions) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := d.path(key)
	if err != nil {
		return err
	}
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("objectstore: create directory for %q: %w", key, err)
	}
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("objectstore: create temporary file for %q: %w", key, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("objectstore: write %q: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("objectstore: sync %q: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("objectstore: close %q: %w", key, err)
	}
	if opts.IfAbsent {
		// link(2) fails with EEXIST if the name exists, atomically, even
		// against other processes.
		lerr := os.Link(tmp, p)
		_ = os.Remove(tmp)
		if lerr != nil {
			if errors.Is(lerr, fs.ErrExist) {
				if fi, serr := os.Lstat(p); serr == nil && fi.IsDir() {
					return fmt.Errorf("objectstore: put %q: key is a prefix of other keys", key)
				}
				return ErrExists
			}
			return fmt.Errorf("objectstore: link %q: %w", key, lerr)
		}
	} else if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("objectstore: rename %q: %w", key, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("objectstore: sync directory of %q: %w", key, err)
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := f.Sync()
	cerr := f.Close()
	if serr != nil {
		return serr
	}
	return cerr
}

// Get implements Store. Under WithMapping, a range of at least
// MinMappedBytes is mapped instead of read (mapped.go).
func (d *Dir) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		if isNotFound(err) {
			return nil, ErrNotFound
		}
		return nil, fmt.Errorf("objectstore: open %q: %w", key, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("objectstore: stat %q: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, ErrNotFound
	}
	start, end, err := clampRange(fi.Size(), off, length)
	if err != nil {
		return nil, err
	}
	if keep := mappingOf(ctx); keep != nil && end-start >= MinMappedBytes {
		// The file never changes once in place (Put writes a temporary
		// file and renames or links it), so a mapping of it stays valid,
		// also after a Delete unlinks it.
		if b, release, err := mapRange(f, start, end); err == nil {
			keep(release)
			return b, nil
		}
		// No mapping (a platform or file system without): read.
	}
	buf := Buffer(ctx, int(end-start))
	if _, err := io.ReadFull(io.NewSectionReader(f, start, end-start), buf); err != nil {
		return nil, fmt.Errorf("objectstore: read %q: %w", key, err)
	}
	return buf, nil
}

// Head implements Store.
func (d *Dir) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	p, err := d.path(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		if isNotFound(err) {
			return ObjectInfo{}, ErrNotFound
		}
		return ObjectInfo{}, fmt.Errorf("objectstore: stat %q: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		return ObjectInfo{}, ErrNotFound
	}
	return ObjectInfo{Key: key, Size: fi.Size(), LastModified: fi.ModTime()}, nil
}

// Delete implements Store. Emptied directories are left in place.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := d.path(key)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		if isNotFound(err) {
			return nil
		}
		return fmt.Errorf("objectstore: stat %q: %w", key, err)
	}
	if fi.IsDir() {
		return nil // a prefix of other keys, not an object
	}
	if err := os.Remove(p); err != nil && !isNotFound(err) {
		return fmt.Errorf("objectstore: delete %q: %w", key, err)
	}
	return nil
}

// List implements Store. Objects created or deleted during the listing may
// or may not be seen.
func (d *Dir) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := d.walk(ctx, "", prefix, fn)
	return err
}

type dirEntry struct {
	entry   fs.DirEntry
	sortKey string // name, plus "/" for directories: keys sort this way
}

// walk lists the directory holding keys starting with rel ("" or "a/b/")
// in lexical key order. It returns done once keys pass prefix.
func (d *Dir) walk(ctx context.Context, rel, prefix string, fn func(ObjectInfo) error) (done bool, err error) {
	entries, err := os.ReadDir(filepath.Join(d.root, filepath.FromSlash(rel)))
	if err != nil {
		if rel != "" && isNotFound(err) {
			return false, nil // removed while listing
		}
		return true, fmt.Errorf("objectstore: list %q: %w", rel, err)
	}
	ents := make([]dirEntry, 0, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		sk := e.Name()
		if e.IsDir() {
			sk += "/"
		}
		ents = append(ents, dirEntry{entry: e, sortKey: sk})
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].sortKey < ents[j].sortKey })
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return true, err
		}
		kp := rel + e.sortKey
		if strings.HasPrefix(kp, prefix) {
			// whole entry matches
		} else if kp > prefix {
			return true, nil // every later key sorts after the prefix's range
		} else if !e.entry.IsDir() || !strings.HasPrefix(prefix, kp) {
			continue
		}
		if e.entry.IsDir() {
			if done, err := d.walk(ctx, kp, prefix, fn); done || err != nil {
				return done, err
			}
			continue
		}
		fi, err := e.entry.Info()
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return true, fmt.Errorf("objectstore: stat %q: %w", kp, err)
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		if err := fn(ObjectInfo{Key: kp, Size: fi.Size(), LastModified: fi.ModTime()}); err != nil {
			return true, err
		}
	}
	return false, nil
}
