// Package objtest is the acceptance suite every objectstore.Store passes.
//
//	func TestStore(t *testing.T) {
//		objtest.Run(t, func(t *testing.T) objectstore.Store { return newStore(t) })
//	}
//
// Each subtest gets its own store from newStore, which must be empty.
package objtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/floe-broker/floe/objectstore"
)

// testTimeout bounds each subtest, so that a hanging store fails instead of
// blocking the run.
const testTimeout = 2 * time.Minute

// Run runs the acceptance suite against stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) objectstore.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, ctx context.Context, s objectstore.Store)
	}{
		{"PutGet", testPutGet},
		{"CopiesData", testCopiesData},
		{"Overwrite", testOverwrite},
		{"IfAbsent", testIfAbsent},
		{"IfAbsentRace", testIfAbsentRace},
		{"RangedReads", testRangedReads},
		{"Missing", testMissing},
		{"Delete", testDelete},
		{"List", testList},
		{"ListStops", testListStops},
		{"DeepKeys", testDeepKeys},
		{"EmptyObject", testEmptyObject},
		{"Large", testLarge},
		{"Concurrent", testConcurrent},
		{"ContextCanceled", testContextCanceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			tc.fn(t, ctx, s)
		})
	}
}

func put(t *testing.T, ctx context.Context, s objectstore.Store, key string, data []byte) {
	t.Helper()
	if err := s.Put(ctx, key, data, objectstore.PutOptions{}); err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
}

func get(t *testing.T, ctx context.Context, s objectstore.Store, key string, off, length int64) []byte {
	t.Helper()
	data, err := s.Get(ctx, key, off, length)
	if err != nil {
		t.Fatalf("Get(%q, %d, %d): %v", key, off, length, err)
	}
	return data
}

func head(t *testing.T, ctx context.Context, s objectstore.Store, key string) objectstore.ObjectInfo {
	t.Helper()
	info, err := s.Head(ctx, key)
	if err != nil {
		t.Fatalf("Head(%q): %v", key, err)
	}
	if info.Key != key {
		t.Errorf("Head(%q).Key = %q", key, info.Key)
	}
	return info
}

func list(t *testing.T, ctx context.Context, s objectstore.Store, prefix string) []objectstore.ObjectInfo {
	t.Helper()
	var out []objectstore.ObjectInfo
	if err := s.List(ctx, prefix, func(info objectstore.ObjectInfo) error {
		out = append(out, info)
		return nil
	}); err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return out
}

func wantBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		if len(got) > 64 || len(want) > 64 {
			t.Fatalf("%s: got %d bytes, want %d bytes (contents differ)", what, len(got), len(want))
		}
		t.Fatalf("%s: got %q, want %q", what, got, want)
	}
}

func randomBytes(seed int64, n int) []byte {
	b := make([]byte, n)
	rand.New(rand.NewSource(seed)).Read(b)
	return b
}

func testPutGet(t *testing.T, ctx context.Context, s objectstore.Store) {
	data := []byte("hello, object store")
	before := time.Now()
	put(t, ctx, s, "a/b/c", data)
	wantBytes(t, "Get", get(t, ctx, s, "a/b/c", 0, -1), data)
	info := head(t, ctx, s, "a/b/c")
	if info.Size != int64(len(data)) {
		t.Errorf("Head size = %d, want %d", info.Size, len(data))
	}
	// Allow for clock skew between the test and a remote server, and for
	// servers that keep one-second precision.
	if d := info.LastModified.Sub(before); d < -time.Hour || d > time.Hour {
		t.Errorf("Head LastModified = %v, want close to %v", info.LastModified, before)
	}
}

func testCopiesData(t *testing.T, ctx context.Context, s objectstore.Store) {
	data := []byte("original")
	put(t, ctx, s, "k", data)
	copy(data, "XXXXXXXX")
	got := get(t, ctx, s, "k", 0, -1)
	wantBytes(t, "Get after changing the put buffer", got, []byte("original"))
	copy(got, "YYYYYYYY")
	wantBytes(t, "Get after changing a returned buffer", get(t, ctx, s, "k", 0, -1), []byte("original"))
}

func testOverwrite(t *testing.T, ctx context.Context, s objectstore.Store) {
	put(t, ctx, s, "k", []byte("first version, the longer one"))
	put(t, ctx, s, "k", []byte("second"))
	wantBytes(t, "Get", get(t, ctx, s, "k", 0, -1), []byte("second"))
	if info := head(t, ctx, s, "k"); info.Size != 6 {
		t.Errorf("Head size = %d, want 6", info.Size)
	}
}

func testIfAbsent(t *testing.T, ctx context.Context, s objectstore.Store) {
	ifAbsent := objectstore.PutOptions{IfAbsent: true}
	if err := s.Put(ctx, "k", []byte("one"), ifAbsent); err != nil {
		t.Fatalf("first if-absent Put: %v", err)
	}
	err := s.Put(ctx, "k", []byte("two"), ifAbsent)
	if !errors.Is(err, objectstore.ErrExists) {
		t.Fatalf("second if-absent Put = %v, want ErrExists", err)
	}
	wantBytes(t, "Get after conflict", get(t, ctx, s, "k", 0, -1), []byte("one"))
	if err := s.Delete(ctx, "k"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := s.Put(ctx, "k", []byte("three"), ifAbsent); err != nil {
		t.Fatalf("if-absent Put after Delete: %v", err)
	}
	wantBytes(t, "Get", get(t, ctx, s, "k", 0, -1), []byte("three"))
	// A plain put still overwrites.
	put(t, ctx, s, "k", []byte("four"))
	wantBytes(t, "Get", get(t, ctx, s, "k", 0, -1), []byte("four"))
}

func testIfAbsentRace(t *testing.T, ctx context.Context, s objectstore.Store) {
	const writers, rounds = 16, 4
	for round := range rounds {
		key := fmt.Sprintf("race/%d", round)
		payloads := make([][]byte, writers)
		for i := range payloads {
			// Big enough that writes overlap in time.
			payloads[i] = append([]byte(fmt.Sprintf("writer %02d:", i)), randomBytes(int64(round*100+i), 64<<10)...)
		}
		errs := make([]error, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs[i] = s.Put(ctx, key, payloads[i], objectstore.PutOptions{IfAbsent: true})
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: writers %d and %d both won the if-absent race", round, winner, i)
				}
				winner = i
			case errors.Is(err, objectstore.ErrExists):
			default:
				t.Fatalf("round %d: writer %d: %v", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer won the if-absent race", round)
		}
		wantBytes(t, fmt.Sprintf("round %d: object after race", round), get(t, ctx, s, key, 0, -1), payloads[winner])
	}
}

func testRangedReads(t *testing.T, ctx context.Context, s objectstore.Store) {
	data := randomBytes(1, 1000)
	put(t, ctx, s, "r", data)
	cases := []struct {
		off, length int64
		want        []byte // nil with wantErr
		wantErr     error
	}{
		{0, -1, data, nil},
		{0, 10, data[:10], nil},
		{0, 1000, data, nil},
		{0, 5000, data, nil},
		{100, 50, data[100:150], nil},
		{500, -1, data[500:], nil},
		{990, 100, data[990:], nil},
		{999, 1, data[999:], nil},
		{1000, 10, []byte{}, nil},
		{1000, -1, []byte{}, nil},
		{0, 0, []byte{}, nil},
		{400, 0, []byte{}, nil},
		{1001, 1, nil, objectstore.ErrInvalidRange},
		{1001, -1, nil, objectstore.ErrInvalidRange},
		{5000, 10, nil, objectstore.ErrInvalidRange},
	}
	for _, c := range cases {
		got, err := s.Get(ctx, "r", c.off, c.length)
		if c.wantErr != nil {
			if !errors.Is(err, c.wantErr) {
				t.Errorf("Get(off=%d, len=%d) error = %v, want %v", c.off, c.length, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Get(off=%d, len=%d): %v", c.off, c.length, err)
			continue
		}
		if !bytes.Equal(got, c.want) {
			t.Errorf("Get(off=%d, len=%d) = %d bytes, want %d bytes [%d:%d]", c.off, c.length, len(got), len(c.want), c.off, c.off+int64(len(c.want)))
		}
	}
}

func testMissing(t *testing.T, ctx context.Context, s objectstore.Store) {
	put(t, ctx, s, "present/x", []byte("x"))
	for _, key := range []string{"missing", "present/y", "present/x/z", "presen"} {
		if _, err := s.Get(ctx, key, 0, -1); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", key, err)
		}
		if _, err := s.Get(ctx, key, 10, 5); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("ranged Get(%q) = %v, want ErrNotFound", key, err)
		}
		if _, err := s.Head(ctx, key); !errors.Is(err, objectstore.ErrNotFound) {
			t.Errorf("Head(%q) = %v, want ErrNotFound", key, err)
		}
	}
	if got := list(t, ctx, s, "missing"); len(got) != 0 {
		t.Errorf("List(missing) = %v, want nothing", got)
	}
}

func testDelete(t *testing.T, ctx context.Context, s objectstore.Store) {
	if err := s.Delete(ctx, "never/existed"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	put(t, ctx, s, "d/a", []byte("a"))
	put(t, ctx, s, "d/ab", []byte("ab"))
	if err := s.Delete(ctx, "d/a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Head(ctx, "d/a"); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("Head after Delete = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, "d/a", 0, -1); !errors.Is(err, objectstore.ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, "d/a"); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	wantBytes(t, "sibling after Delete", get(t, ctx, s, "d/ab", 0, -1), []byte("ab"))
	got := list(t, ctx, s, "d/")
	if len(got) != 1 || got[0].Key != "d/ab" {
		t.Errorf("List after Delete = %v, want only d/ab", got)
	}
}

func testList(t *testing.T, ctx context.Context, s objectstore.Store) {
	keys := []string{
		"p/b/2", "p/a", "q/1", "p/a.c", "p/a0", "p/b/1", "pp", "p/a-",
		"p/b0", "p/c/d/e/f", "p/A", "p/a~", "p/a_", "p/b.c", "p/b-",
	}
	sizes := map[string]int64{}
	for i, k := range keys {
		sizes[k] = int64(i + 1)
		put(t, ctx, s, k, bytes.Repeat([]byte{'x'}, i+1))
	}
	before := time.Now()
	check := func(prefix string) {
		t.Helper()
		var want []string
		for _, k := range keys {
			if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
				want = append(want, k)
			}
		}
		sort.Strings(want)
		got := list(t, ctx, s, prefix)
		var gotKeys []string
		for _, info := range got {
			gotKeys = append(gotKeys, info.Key)
			if info.Size != sizes[info.Key] {
				t.Errorf("List(%q): %q size %d, want %d", prefix, info.Key, info.Size, sizes[info.Key])
			}
			if d := info.LastModified.Sub(before); d < -time.Hour || d > time.Hour {
				t.Errorf("List(%q): %q LastModified = %v, want close to %v", prefix, info.Key, info.LastModified, before)
			}
		}
		if fmt.Sprint(gotKeys) != fmt.Sprint(want) {
			t.Errorf("List(%q) keys = %q, want %q", prefix, gotKeys, want)
		}
	}
	for _, prefix := range []string{"", "p", "p/", "p/a", "p/a.", "p/b", "p/b/", "p/b/1", "p/c/d/e/f", "p/c/d/", "pp", "q", "zzz", "p/z", "A"} {
		check(prefix)
	}
}

func testListStops(t *testing.T, ctx context.Context, s objectstore.Store) {
	for i := range 5 {
		put(t, ctx, s, fmt.Sprintf("s/%d", i), []byte{byte(i)})
	}
	errStop := errors.New("stop here")
	calls := 0
	err := s.List(ctx, "s/", func(info objectstore.ObjectInfo) error {
		calls++
		if info.Key == "s/1" {
			return errStop
		}
		return nil
	})
	if !errors.Is(err, errStop) {
		t.Errorf("List error = %v, want the callback's error", err)
	}
	if calls != 2 {
		t.Errorf("callback called %d times, want 2 (stop after s/1)", calls)
	}
}

func testDeepKeys(t *testing.T, ctx context.Context, s objectstore.Store) {
	keys := []string{
		"a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p",
		"v1/files/3f/01J9ZK8Q5V6X7Y8Z9A0B1C2D3E",
		"v1/files/3f/01J9ZK8Q5V6X7Y8Z9A0B1C2D3F",
		"v1/files/a0/01J9ZK8Q5V6X7Y8Z9A0B1C2D3E",
		"x/with-dash_under.dot~tilde/123",
	}
	for i, k := range keys {
		put(t, ctx, s, k, []byte(fmt.Sprintf("object %d", i)))
	}
	for i, k := range keys {
		wantBytes(t, "Get "+k, get(t, ctx, s, k, 0, -1), []byte(fmt.Sprintf("object %d", i)))
	}
	got := list(t, ctx, s, "v1/files/3f/")
	if len(got) != 2 || got[0].Key != keys[1] || got[1].Key != keys[2] {
		t.Errorf("List(v1/files/3f/) = %v", got)
	}
	if got := list(t, ctx, s, "a/b/c/"); len(got) != 1 || got[0].Key != keys[0] {
		t.Errorf("List(a/b/c/) = %v", got)
	}
}

func testEmptyObject(t *testing.T, ctx context.Context, s objectstore.Store) {
	put(t, ctx, s, "empty", nil)
	put(t, ctx, s, "empty2", []byte{})
	for _, key := range []string{"empty", "empty2"} {
		if info := head(t, ctx, s, key); info.Size != 0 {
			t.Errorf("Head(%q) size = %d, want 0", key, info.Size)
		}
		if got := get(t, ctx, s, key, 0, -1); len(got) != 0 {
			t.Errorf("Get(%q) = %d bytes, want 0", key, len(got))
		}
		if got := get(t, ctx, s, key, 0, 10); len(got) != 0 {
			t.Errorf("Get(%q, 0, 10) = %d bytes, want 0", key, len(got))
		}
		if _, err := s.Get(ctx, key, 1, -1); !errors.Is(err, objectstore.ErrInvalidRange) {
			t.Errorf("Get(%q, 1, -1) = %v, want ErrInvalidRange", key, err)
		}
	}
	if err := s.Put(ctx, "empty", []byte("x"), objectstore.PutOptions{IfAbsent: true}); !errors.Is(err, objectstore.ErrExists) {
		t.Errorf("if-absent Put over an empty object = %v, want ErrExists", err)
	}
	got := list(t, ctx, s, "empty")
	if len(got) != 2 || got[0].Size != 0 || got[1].Size != 0 {
		t.Errorf("List(empty) = %v, want two objects of size 0", got)
	}
}

func testLarge(t *testing.T, ctx context.Context, s objectstore.Store) {
	const size = 5 << 20
	data := randomBytes(5, size)
	put(t, ctx, s, "big/object", data)
	if info := head(t, ctx, s, "big/object"); info.Size != size {
		t.Errorf("Head size = %d, want %d", info.Size, size)
	}
	wantBytes(t, "Get whole", get(t, ctx, s, "big/object", 0, -1), data)
	wantBytes(t, "Get middle", get(t, ctx, s, "big/object", 2<<20+7, 1<<20), data[2<<20+7:3<<20+7])
	wantBytes(t, "Get tail", get(t, ctx, s, "big/object", size-100, 1<<20), data[size-100:])
}

func testConcurrent(t *testing.T, ctx context.Context, s objectstore.Store) {
	const workers, perWorker = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				key := fmt.Sprintf("c/%d/%d", w, i)
				data := randomBytes(int64(w*1000+i), 1000+i)
				if err := s.Put(ctx, key, data, objectstore.PutOptions{IfAbsent: i%2 == 0}); err != nil {
					errs <- fmt.Errorf("Put(%q): %w", key, err)
					return
				}
				got, err := s.Get(ctx, key, 0, -1)
				if err != nil {
					errs <- fmt.Errorf("Get(%q): %w", key, err)
					return
				}
				if !bytes.Equal(got, data) {
					errs <- fmt.Errorf("Get(%q): wrong contents", key)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := list(t, ctx, s, "c/"); len(got) != workers*perWorker {
		t.Errorf("List(c/) = %d objects, want %d", len(got), workers*perWorker)
	}
}

func testContextCanceled(t *testing.T, ctx context.Context, s objectstore.Store) {
	put(t, ctx, s, "cc/k", []byte("data"))
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a canceled context = %v, want context.Canceled", op, err)
		}
	}
	check("Put", s.Put(canceled, "cc/new", []byte("x"), objectstore.PutOptions{}))
	_, err := s.Get(canceled, "cc/k", 0, -1)
	check("Get", err)
	_, err = s.Head(canceled, "cc/k")
	check("Head", err)
	check("Delete", s.Delete(canceled, "cc/k"))
	called := false
	err = s.List(canceled, "cc/", func(objectstore.ObjectInfo) error { called = true; return nil })
	check("List", err)
	if called {
		t.Errorf("List with a canceled context called its callback")
	}
	// The store still works with a live context.
	wantBytes(t, "Get after canceled calls", get(t, ctx, s, "cc/k", 0, -1), []byte("data"))
}
