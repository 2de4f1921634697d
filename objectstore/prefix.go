package objectstore

import (
	"context"
	"strings"
)

// WithPrefix returns a Store that keeps every key of s under prefix + "/",
// so that several users can share one bucket. List results have the prefix
// stripped. Trailing slashes of prefix are ignored; an empty prefix returns
// s itself.
func WithPrefix(s Store, prefix string) Store {
	prefix = strings.TrimRight(prefix, "/")
	if prefix == "" {
		return s
	}
	return &prefixed{inner: s, prefix: prefix + "/"}
}

type prefixed struct {
	inner  Store
	prefix string // ends with "/"
}

func (p *prefixed) Put(ctx context.Context, key string, data []byte, opts PutOptions) error {
	if key == "" {
		return errEmptyKey
	}
	return p.inner.Put(ctx, p.prefix+key, data, opts)
}

func (p *prefixed) Get(ctx context.Context, key string, off, length int64) ([]byte, error) {
	return p.inner.Get(ctx, p.prefix+key, off, length)
}

func (p *prefixed) Head(ctx context.Context, key string) (ObjectInfo, error) {
	info, err := p.inner.Head(ctx, p.prefix+key)
	info.Key = strings.TrimPrefix(info.Key, p.prefix)
	return info, err
}

func (p *prefixed) Delete(ctx context.Context, key string) error {
	return p.inner.Delete(ctx, p.prefix+key)
}

func (p *prefixed) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	return p.inner.List(ctx, p.prefix+prefix, func(info ObjectInfo) error {
		info.Key = strings.TrimPrefix(info.Key, p.prefix)
		return fn(info)
	})
}
