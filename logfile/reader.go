package logfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/floe-broker/floe/kbatch"
)

// checkVersion checks a format version and flags pair.
func checkVersion(b []byte, where string) error {
	be := binary.BigEndian
	if v := be.Uint16(b); v != FormatVersion {
		return fmt.Errorf("%w: %s format version %d, this reader knows %d", ErrCorrupt, where, v, FormatVersion)
	}
	if f := be.Uint16(b[2:]); f != 0 {
		return fmt.Errorf("%w: %s flags %#04x, this reader knows none", ErrCorrupt, where, f)
	}
	return nil
}

// readTrailer parses the trailer, the last TrailerSize bytes of a file of
// fileSize bytes (at least MinFileSize), and returns the byte range of the
// footer. It checks the magic, the version and that the footer fits
// between the header and the trailer with a whole number of entries; the
// checksums are checked by parseFooter.
func readTrailer(trailer []byte, fileSize int64) (footerOff int64, footerLen int64, err error) {
	if !bytes.Equal(trailer[trMagic:], magic[:]) {
		return 0, 0, fmt.Errorf("%w: trailer magic %q", ErrCorrupt, trailer[trMagic:])
	}
	if err := checkVersion(trailer[trVersion:], "trailer"); err != nil {
		return 0, 0, err
	}
	footerLen = int64(binary.BigEndian.Uint32(trailer[trFooterLen:]))
	if footerLen < footerCountSize || (footerLen-footerCountSize)%EntrySize != 0 {
		return 0, 0, fmt.Errorf("%w: footer length %d is not 4 + n*%d", ErrCorrupt, footerLen, EntrySize)
	}
	if footerLen > fileSize-HeaderSize-TrailerSize {
		return 0, 0, fmt.Errorf("%w: footer length %d in a file of %d bytes", ErrCorrupt, footerLen, fileSize)
	}
	return fileSize - TrailerSize - footerLen, footerLen, nil
}

// parseFooter checks and decodes the footer at the byte range readTrailer
// returned, given the trailer. It checks the footer checksum, the entry
// count and that the entries tile the body: the first starts right after
// the header, each next one where the previous one ends, and the last ends
// at the footer.
func parseFooter(footer []byte, trailer []byte, footerOff int64) ([]Entry, error) {
	footerLen := int64(len(footer))
	crc := crc32.Update(crc32.Checksum(footer, castagnoli), castagnoli, trailer[:trFooterCRC])
	if want := binary.BigEndian.Uint32(trailer[trFooterCRC:]); crc != want {
		return nil, fmt.Errorf("%w: footer CRC %08x, computed %08x", ErrCorrupt, want, crc)
	}
	n := int64(binary.BigEndian.Uint32(footer))
	if n != (footerLen-footerCountSize)/EntrySize {
		return nil, fmt.Errorf("%w: %d entries in a footer of %d bytes", ErrCorrupt, n, footerLen)
	}
	entries := make([]Entry, n)
	next := int64(HeaderSize)
	for i := range entries {
		e := readEntry(footer[footerCountSize+i*EntrySize:])
		if e.ByteOffset != next {
			return nil, fmt.Errorf("%w: entry %d at byte %d, want %d", ErrCorrupt, i, e.ByteOffset, next)
		}
		if e.ByteLength < kbatch.HeaderSize || e.ByteLength > footerOff-next {
			return nil, fmt.Errorf("%w: entry %d of %d bytes at byte %d, body ends at %d",
				ErrCorrupt, i, e.ByteLength, e.ByteOffset, footerOff)
		}
		if e.Partition < 0 || e.RecordCount < 1 {
			return nil, fmt.Errorf("%w: entry %d with partition %d and %d records", ErrCorrupt, i, e.Partition, e.RecordCount)
		}
		next += e.ByteLength
		entries[i] = e
	}
	if next != footerOff {
		return nil, fmt.Errorf("%w: entries end at byte %d, the footer starts at %d", ErrCorrupt, next, footerOff)
	}
	return entries, nil
}

// ReadIndex checks a whole file (header, trailer, footer and body
// checksums, entry bounds) and returns its entries.
func ReadIndex(file []byte) ([]Entry, error) { return ReadIndexPrefix(file, nil) }

// ReadIndexPrefix is ReadIndex for a caller that already hashed a prefix
// of the file as it arrived, while it was in the processor's caches:
// prefix, given where the body ends, returns the CRC-32C of the file's
// first n bytes for an n at most there (0, 0: none known), and only the
// body from n on is hashed here. An n outside [0, body end] is ignored and
// the whole body hashed. A wrong CRC fails the check as corrupt bytes
// would.
func ReadIndexPrefix(file []byte, prefix func(bodyEnd int) (crc uint32, n int)) ([]Entry, error) {
	entries, footerOff, err := readFooter(file)
	if err != nil {
		return nil, err
	}
	var (
		crc uint32
		n   int
	)
	if prefix != nil {
		if crc, n = prefix(int(footerOff)); n <= 0 || int64(n) > footerOff {
			crc, n = 0, 0
		}
	}
	trailer := file[len(file)-TrailerSize:]
	crc = crc32.Update(crc, castagnoli, file[n:footerOff])
	if want := binary.BigEndian.Uint32(trailer[trBodyCRC:]); crc != want {
		return nil, fmt.Errorf("%w: body CRC %08x, computed %08x", ErrCorrupt, want, crc)
	}
	return entries, nil
}

// Footer is ReadIndex without the body checksum: it checks the header,
// trailer and footer (its checksum, entry bounds) and returns the entries,
// in O(entries). For a file whose body was checked when it was read.
func Footer(file []byte) ([]Entry, error) {
	entries, _, err := readFooter(file)
	return entries, err
}

// readFooter is ReadIndex up to the body checksum; it also returns where
// the footer starts.
func readFooter(file []byte) ([]Entry, int64, error) {
	size := int64(len(file))
	if size < MinFileSize {
		return nil, 0, fmt.Errorf("%w: file of %d bytes, under the minimum %d", ErrCorrupt, size, MinFileSize)
	}
	if !bytes.Equal(file[:4], magic[:]) {
		return nil, 0, fmt.Errorf("%w: header magic %q", ErrCorrupt, file[:4])
	}
	if err := checkVersion(file[4:HeaderSize], "header"); err != nil {
		return nil, 0, err
	}
	trailer := file[size-TrailerSize:]
	footerOff, footerLen, err := readTrailer(trailer, size)
	if err != nil {
		return nil, 0, err
	}
	entries, err := parseFooter(file[footerOff:footerOff+footerLen], trailer, footerOff)
	if err != nil {
		return nil, 0, err
	}
	return entries, footerOff, nil
}

// Batch returns the bytes of entry e's batch in file, a capped subslice of
// file. It checks that the range lies within the file's body and that the
// batch there has e's length; it does not check the batch's CRC (see
// kbatch.ParseInfo).
func Batch(file []byte, e Entry) ([]byte, error) {
	size := int64(len(file))
	bodyEnd := size - TrailerSize - footerCountSize // the body ends at the latest here
	if e.ByteOffset < HeaderSize || e.ByteLength < kbatch.HeaderSize ||
		e.ByteOffset > bodyEnd || e.ByteLength > bodyEnd-e.ByteOffset {
		return nil, fmt.Errorf("%w: batch of %d bytes at byte %d outside the body of a %d-byte file",
			ErrCorrupt, e.ByteLength, e.ByteOffset, size)
	}
	end := e.ByteOffset + e.ByteLength
	b := file[e.ByteOffset:end:end]
	if n := int64(binary.BigEndian.Uint32(b[8:])) + 12; n != e.ByteLength {
		return nil, fmt.Errorf("%w: batch at byte %d is %d bytes, its entry says %d", ErrCorrupt, e.ByteOffset, n, e.ByteLength)
	}
	return b, nil
}
