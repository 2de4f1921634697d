// Package kbatch encodes and decodes Kafka v2 record batches (magic 2), the
// unit floe stores, replicates and serves.
//
// A batch is a 61-byte header followed by its records, compressed as a
// whole when the batch has a codec. All integers are big-endian:
//
//	 0  base offset            int64   not covered by the CRC
//	 8  batch length           int32   bytes after this field
//	12  partition leader epoch int32
//	16  magic                  int8    always 2
//	17  CRC-32C                uint32  over bytes 21 to the end
//	21  attributes             int16   bits 0-2 codec, 3 LogAppendTime,
//	                                   4 transactional, 5 control
//	23  last offset delta      int32
//	27  first timestamp        int64   unix ms
//	35  max timestamp          int64   unix ms
//	43  producer id            int64
//	51  producer epoch         int16
//	53  base sequence          int32
//	57  record count           int32
//	61  records (possibly compressed)
//
// Each record is varint encoded: length, attributes (int8), timestamp delta,
// offset delta, key, value (each a zigzag varint length, -1 for null, then
// the bytes) and a varint count of headers (key string, nullable value).
//
// floe stores batches with a placeholder base offset of 0: offsets are
// assigned when the file is committed. Readers take the real base offset
// from the metadata store: the agent adds it to each record's offset delta
// as it decodes; a reader passing batches on undecoded writes it in with
// SetBaseOffset. The CRC does not cover the base offset, so the checksum
// stays valid either way. floe only stores dense
// batches: offset delta i for record i, so RecordCount == LastOffsetDelta+1.
//
// Decoding is built for hostile input: every length and count is checked
// against the bytes actually present before anything is allocated, and
// decompression is bounded, so Decode allocates a bounded multiple of its
// input or of its decompression limit and never panics. Snappy batches may
// be raw block snappy (as franz-go and Encode write them) or xerial framed
// (as the Java producer writes them).
package kbatch
