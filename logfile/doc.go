// Package logfile reads and writes floe's object file: one file holds the
// record batches of many partitions, laid back to back, followed by an
// index of them.
//
// # Layout
//
// All integers are big-endian. Offsets are from the start of the file.
//
//	+---------------------------------------------------------------+
//	| header (HeaderSize = 8 bytes)                                 |
//	|   0  magic           "FLOE"                                   |
//	|   4  format version  uint16 = 1                               |
//	|   6  flags           uint16 = 0                               |
//	+---------------------------------------------------------------+
//	| body: Kafka v2 record batches back to back, each with base    |
//	| offset 0 (a placeholder; readers patch in the real one, which |
//	| the batch CRC does not cover). The first batch starts at 8;   |
//	| each next one starts where the previous one ends.             |
//	+---------------------------------------------------------------+
//	| footer (4 + n*EntrySize bytes), starts at footerOff           |
//	|   0  entry count n   uint32                                   |
//	|   4  n entries of EntrySize = 50 bytes, in body order:        |
//	|        0  topic id          int64                             |
//	|        8  partition         int32   >= 0                      |
//	|       12  byte offset       int64   of the batch in the file  |
//	|       20  byte length       uint32  of the whole batch        |
//	|       24  record count      int32   >= 1                      |
//	|       28  max timestamp     int64   unix ms                   |
//	|       36  producer id       int64   -1: none                  |
//	|       44  producer epoch    int16                             |
//	|       46  base sequence     int32                             |
//	+---------------------------------------------------------------+
//	| trailer (TrailerSize = 20 bytes), the last bytes of the file  |
//	|   0  footer length   uint32  4 + n*EntrySize                  |
//	|   4  body CRC-32C    uint32  of bytes [0, footerOff): header  |
//	|                              and body                         |
//	|   8  format version  uint16 = 1                               |
//	|  10  flags           uint16 = 0                               |
//	|  12  footer CRC-32C  uint32  of bytes [footerOff, size-8):    |
//	|                              the footer and trailer bytes 0-11|
//	|  16  magic           "FLOE"                                   |
//	+---------------------------------------------------------------+
//
// footerOff = file size - TrailerSize - footer length. The entries tile the
// body exactly: the first starts at HeaderSize, each next one at the end of
// the previous one, and the last ends at footerOff. A file may hold no
// batch at all.
//
// # Reading
//
// ReadIndex checks a whole file — header, trailer, footer and body
// checksums, and every entry's bounds — and returns its entries; Batch then
// returns each entry's bytes. They are the reference reader of the format
// (the golden file and the fuzz tests go through them).
//
// The metadata store records each batch's file key and byte range, so the
// broker does not need the footer to find batches. The agent checks every
// file it loads whole into its read cache with ReadIndex (a mismatch is data
// loss and the file is not cached); ranged reads of bigger files rely on
// each Kafka batch's own CRC-32C (package kbatch), which covers everything
// in the batch but its base offset. The footer also lets a file be
// understood without the metadata store, for repair and inspection.
//
// Every decoder bounds-checks lengths and counts against the bytes present
// before allocating, and never panics on hostile input; every error about
// malformed input wraps ErrCorrupt.
package logfile
