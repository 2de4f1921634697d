package objectstore

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"
)

// Memory is an in-memory Store for tests. It copies data in and out, so
// callers may reuse their buffers, and honours IfAbsent atomically.
type Memory struct {
	mu   sync.RWMutex // protects objs
	objs map[string]memObject
}

type memObject struct {
	data    []byte
	modTime time.Time
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{objs: make(map[string]memObject)}
}

// Put implements Store.
func (m *Memory) Put(ctx context.Context, key string, data []byte, opts PutOptions) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if key == "" {
		return errEmptyKey
	}
	obj := memObject{data: append([]byte(nil), data...), modTime: time.Now()}
	m.mu.Lock()
	defer m.mu.Unlock()
	if opts.IfAbsent {
		if _, ok := m.objs[key]; ok {
			return ErrExists
		}
	}
	m.objs[key] = obj
	return nil
}

// Get implements Store.
func (m *Memory) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	obj, ok := m.objs[key]
	m.mu.RUnlock()
	if !ok {
		return nil, ErrNotFound
	}
	start, end, err := clampRange(int64(len(obj.data)), off, length)
	if err != nil {
		return nil, err
	}
	buf := Buffer(ctx, int(end-start))
	copy(buf, obj.data[start:end])
	return buf, nil
}

// Head implements Store.
func (m *Memory) Head(ctx context.Context, key string) (ObjectInfo, error) {
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	m.mu.RLock()
	obj, ok := m.objs[key]
	m.mu.RUnlock()
	if !ok {
		return ObjectInfo{}, ErrNotFound
	}
	return ObjectInfo{Key: key, Size: int64(len(obj.data)), LastModified: obj.modTime}, nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.objs, key)
	m.mu.Unlock()
	return nil
}

// List implements Store. It lists a snapshot taken when the call starts, so
// fn may modify the store.
func (m *Memory) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	infos := make([]ObjectInfo, 0, len(m.objs))
	for k, obj := range m.objs {
		if strings.HasPrefix(k, prefix) {
			infos = append(infos, ObjectInfo{Key: k, Size: int64(len(obj.data)), LastModified: obj.modTime})
		}
	}
	m.mu.RUnlock()
	sort.Slice(infos, func(i, j int) bool { return infos[i].Key < infos[j].Key })
	for _, info := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// Len returns the number of stored objects.
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.objs)
}
