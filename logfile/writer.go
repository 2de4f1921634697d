package logfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/floe-broker/floe/kbatch"
)

// maxEntries is the most entries a footer length (uint32) can describe.
const maxEntries = (math.MaxUint32 - footerCountSize) / EntrySize

// errFinished is returned by Append after Finish.
var errFinished = errors.New("logfile: append after Finish")

// Writer builds one file in memory. It is not safe for concurrent use.
type Writer struct {
	buf      []byte // header and body so far; the file once finished
	bodyCRC  uint32 // CRC-32C of buf up to the footer
	fileCRC  uint32 // CRC-32C of the whole file, once finished
	entries  []Entry
	finished bool
}

// NewWriter returns a writer whose buffer starts with room for sizeHint
// bytes of file.
func NewWriter(sizeHint int) *Writer {
	w := &Writer{buf: appendHeader(make([]byte, 0, max(sizeHint, MinFileSize)))}
	w.bodyCRC = crc32.Checksum(w.buf, castagnoli)
	return w
}

// NewWriterBuffer is NewWriter writing into buf's backing array (from
// its start, whatever buf holds), for a caller that reuses file buffers;
// the file outgrows it if it must.
func NewWriterBuffer(buf []byte) *Writer {
	w := &Writer{buf: appendHeader(buf[:0])}
	w.bodyCRC = crc32.Checksum(w.buf, castagnoli)
	return w
}

// Append validates batch (exactly one Kafka v2 record batch) with
// kbatch.ParseInfo, copies it into the body with its base offset set to the
// 0 placeholder, and returns its entry. The batch's CRC does not cover the
// base offset, so it stays valid.
func (w *Writer) Append(topicID int64, partition int32, batch []byte) (Entry, error) {
	return w.append(topicID, partition, batch, kbatch.ParseInfo)
}

// AppendParsed is Append for a batch its caller has already validated:
// info must be what kbatch.ParseInfo (or ParseStored) returned for these
// very bytes, unchanged since, its CRC checked (not ParseStoredVerified on
// bytes of a file whose own CRC was not checked). It copies the batch
// without checking its CRC again (the batcher checks each batch once,
// when it is handed in); the file's body CRC is combined from the batch's
// CRC field (extendBodyCRC), so a batch whose field did not match its
// bytes would make the file's CRC wrong, and its PUT refused.
func (w *Writer) AppendParsed(topicID int64, partition int32, batch []byte, info kbatch.Info) (Entry, error) {
	if w.finished {
		return Entry{}, errFinished
	}
	return w.appendInfo(topicID, partition, batch, info)
}

func (w *Writer) append(topicID int64, partition int32, batch []byte, parse func([]byte) (kbatch.Info, error)) (Entry, error) {
	if w.finished {
		return Entry{}, errFinished
	}
	info, err := parse(batch)
	if err != nil {
		return Entry{}, fmt.Errorf("logfile: append: %w", err)
	}
	return w.appendInfo(topicID, partition, batch, info)
}

// appendInfo copies batch, described by info, into the body.
func (w *Writer) appendInfo(topicID int64, partition int32, batch []byte, info kbatch.Info) (Entry, error) {
	if partition < 0 {
		return Entry{}, fmt.Errorf("logfile: append: negative partition %d", partition)
	}
	if len(batch) < kbatch.HeaderSize {
		return Entry{}, fmt.Errorf("logfile: append: %d bytes, shorter than a batch header", len(batch))
	}
	if info.BatchLength != len(batch) {
		return Entry{}, fmt.Errorf("logfile: append: %d bytes after the batch's %d", len(batch)-info.BatchLength, info.BatchLength)
	}
	if len(w.entries) >= maxEntries {
		return Entry{}, fmt.Errorf("logfile: append: file already holds %d batches, the most a footer indexes", len(w.entries))
	}
	e := Entry{
		TopicID:       topicID,
		Partition:     partition,
		ByteOffset:    int64(len(w.buf)),
		ByteLength:    int64(len(batch)),
		RecordCount:   info.RecordCount,
		MaxTimestamp:  info.MaxTimestamp,
		ProducerID:    info.ProducerID,
		ProducerEpoch: info.ProducerEpoch,
		BaseSequence:  info.BaseSequence,
	}
	w.buf = append(w.buf, batch...)
	added := w.buf[e.ByteOffset:]
	binary.BigEndian.PutUint64(added, 0) // kbatch.SetBaseOffset, which cannot fail here
	w.bodyCRC = extendBodyCRC(w.bodyCRC, added)
	w.entries = append(w.entries, e)
	return e, nil
}

// combineMin is the smallest batch whose body CRC is combined from the
// batch's own CRC rather than computed over its bytes: below it, the pass
// costs less than the combination (BenchmarkExtendBodyCRC).
const combineMin = 2 << 10

// extendBodyCRC returns the body CRC crc extended over batch, a Kafka v2
// batch as it lies in the body, whose CRC field has been checked against
// its bytes (Append and AppendParsed only take such batches): the field
// is the CRC-32C of batch[21:], so only the 21 bytes before it are
// read (crc_combine.go).
func extendBodyCRC(crc uint32, batch []byte) uint32 {
	if len(batch) < combineMin {
		return crc32.Update(crc, castagnoli, batch)
	}
	crc = crc32.Update(crc, castagnoli, batch[:batchCRCCovers])
	return crc32cCombine(crc, binary.BigEndian.Uint32(batch[batchCRCField:]), len(batch)-batchCRCCovers)
}

// The Kafka v2 batch header: its CRC field, and where what it covers
// begins (the attributes).
const (
	batchCRCField  = 17
	batchCRCCovers = 21
)

// Len returns the size the finished file will have: header, body, footer
// and trailer.
func (w *Writer) Len() int {
	if w.finished {
		return len(w.buf)
	}
	return len(w.buf) + footerCountSize + len(w.entries)*EntrySize + TrailerSize
}

// Entries returns a copy of the entries appended so far, in body order.
func (w *Writer) Entries() []Entry {
	return append([]Entry(nil), w.entries...)
}

// Finish appends the footer and trailer and returns the complete file.
// Afterwards Append fails and Finish returns the same file again.
func (w *Writer) Finish() []byte {
	if w.finished {
		return w.buf
	}
	footerOff := len(w.buf)
	footerLen := footerCountSize + len(w.entries)*EntrySize
	if cap(w.buf)-len(w.buf) < footerLen+TrailerSize {
		nb := make([]byte, len(w.buf), len(w.buf)+footerLen+TrailerSize)
		copy(nb, w.buf)
		w.buf = nb
	}
	be := binary.BigEndian
	b := be.AppendUint32(w.buf, uint32(len(w.entries)))
	for i := range w.entries {
		b = appendEntry(b, &w.entries[i])
	}
	b = be.AppendUint32(b, uint32(footerLen))
	b = be.AppendUint32(b, w.bodyCRC)
	b = be.AppendUint16(b, FormatVersion)
	b = be.AppendUint16(b, 0)
	b = be.AppendUint32(b, crc32.Checksum(b[footerOff:], castagnoli))
	b = append(b, magic[:]...)
	w.fileCRC = crc32.Update(w.bodyCRC, castagnoli, b[footerOff:])
	w.buf = b
	w.finished = true
	return b
}

// FileCRC returns the CRC-32C of the whole file Finish returned, from the
// body's, computed as batches were appended, and the footer and trailer:
// no pass over the body. Only after Finish.
func (w *Writer) FileCRC() uint32 { return w.fileCRC }
