package grpcwire

// Segments returns the answer's segments, in order: concatenated, they are
// its batches (Bytes, without the copy). They reference the bytes read
// and the answer's own buffer: they may be written out (the Kafka
// listener writes them into its frames) but not modified, and only until
// the answer is dropped (Drop releases what they reference). Nil once the
// answer was sent or dropped.
func (b *Batches) Segments() [][]byte {
	if b.state.Load() != batchesOpen {
		return nil
	}
	return b.segs
}
