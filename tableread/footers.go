package tableread

import (
	"sync"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// footers keeps the parsed footers (Parquet file metadata) of the data
// files decodeFile read, and floe's columns in them, by path and size: a
// table's data file never changes once written, and each scan opens its
// files afresh, so each parsed its footer again (the Thrift decode, 5%
// of a table catch-up's CPU in a profile). A file whose size differs is
// another file. Bounded in entries and in footer bytes; when full it
// starts over (the footers of the files read next are what it keeps).
type footers struct {
	mu    sync.Mutex // protects byKey, bytes and hits
	byKey map[footerKey]footer
	bytes int // the footers' serialized bytes
	hits  int // gets answered (tests)
}

type footerKey struct {
	path string
	size int64
}

type footer struct {
	md *metadata.FileMetaData // read only once kept
	l  layout
}

const (
	maxFooters     = 1024
	maxFooterBytes = 16 << 20
)

func newFooters() *footers { return &footers{byKey: map[footerKey]footer{}} }

// get returns the footer of the file at path of size bytes, if kept.
func (fs *footers) get(path string, size int64) (footer, bool) {
	if fs == nil {
		return footer{}, false
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.byKey[footerKey{path, size}]
	if ok {
		fs.hits++
	}
	return f, ok
}

// put keeps f as the footer of the file at path of size bytes.
func (fs *footers) put(path string, size int64, f footer) {
	if fs == nil || f.md.Size() > maxFooterBytes/16 {
		return // a footer this large is parsed each time
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	k := footerKey{path, size}
	if _, ok := fs.byKey[k]; ok {
		return
	}
	if len(fs.byKey) >= maxFooters || fs.bytes+f.md.Size() > maxFooterBytes {
		clear(fs.byKey)
		fs.bytes = 0
	}
	fs.byKey[k] = f
	fs.bytes += f.md.Size()
}

// stats is the footers kept and the gets they answered (tests).
func (fs *footers) stats() (kept, hits int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.byKey), fs.hits
}
