package logfile

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// ErrCorrupt is wrapped by every error reporting a malformed file.
var ErrCorrupt = errors.New("logfile: corrupt file")

// Sizes of the fixed parts of a file.
const (
	// HeaderSize is the size of the file header.
	HeaderSize = 8
	// TrailerSize is the size of the trailer ending the file.
	TrailerSize = 20
	// EntrySize is the size of one footer entry.
	EntrySize = 50
	// FormatVersion is the version this package writes and reads.
	FormatVersion = 1

	// footerCountSize is the entry count at the start of the footer.
	footerCountSize = 4
	// MinFileSize is the size of a file without any batch.
	MinFileSize = HeaderSize + footerCountSize + TrailerSize
)

// magic starts and ends every file.
var magic = [4]byte{'F', 'L', 'O', 'E'}

// Byte offsets of the trailer fields.
const (
	trFooterLen = 0
	trBodyCRC   = 4
	trVersion   = 8
	trFlags     = 10
	trFooterCRC = 12
	trMagic     = 16
)

// Byte offsets of the entry fields.
const (
	enTopicID       = 0
	enPartition     = 8
	enByteOffset    = 12
	enByteLength    = 20
	enRecordCount   = 24
	enMaxTimestamp  = 28
	enProducerID    = 36
	enProducerEpoch = 44
	enBaseSequence  = 46
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Entry is the index entry of one batch of a file.
type Entry struct {
	TopicID       int64
	Partition     int32
	ByteOffset    int64 // of the batch from the start of the file
	ByteLength    int64 // of the whole batch
	RecordCount   int32
	MaxTimestamp  int64 // unix ms
	ProducerID    int64 // -1: not an idempotent producer
	ProducerEpoch int16
	BaseSequence  int32
}

func appendHeader(b []byte) []byte {
	b = append(b, magic[:]...)
	b = binary.BigEndian.AppendUint16(b, FormatVersion)
	return binary.BigEndian.AppendUint16(b, 0)
}

func appendEntry(b []byte, e *Entry) []byte {
	be := binary.BigEndian
	b = be.AppendUint64(b, uint64(e.TopicID))
	b = be.AppendUint32(b, uint32(e.Partition))
	b = be.AppendUint64(b, uint64(e.ByteOffset))
	b = be.AppendUint32(b, uint32(e.ByteLength))
	b = be.AppendUint32(b, uint32(e.RecordCount))
	b = be.AppendUint64(b, uint64(e.MaxTimestamp))
	b = be.AppendUint64(b, uint64(e.ProducerID))
	b = be.AppendUint16(b, uint16(e.ProducerEpoch))
	return be.AppendUint32(b, uint32(e.BaseSequence))
}

// readEntry decodes an entry from b, which holds at least EntrySize bytes.
func readEntry(b []byte) Entry {
	be := binary.BigEndian
	return Entry{
		TopicID:       int64(be.Uint64(b[enTopicID:])),
		Partition:     int32(be.Uint32(b[enPartition:])),
		ByteOffset:    int64(be.Uint64(b[enByteOffset:])),
		ByteLength:    int64(be.Uint32(b[enByteLength:])),
		RecordCount:   int32(be.Uint32(b[enRecordCount:])),
		MaxTimestamp:  int64(be.Uint64(b[enMaxTimestamp:])),
		ProducerID:    int64(be.Uint64(b[enProducerID:])),
		ProducerEpoch: int16(be.Uint16(b[enProducerEpoch:])),
		BaseSequence:  int32(be.Uint32(b[enBaseSequence:])),
	}
}
