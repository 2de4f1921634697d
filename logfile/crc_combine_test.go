package logfile

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/floe-broker/floe/kbatch"
)

func TestCRC32CCombine(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 1<<20+3)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	for _, n := range []int{0, 1, 2, 21, 1000, 4096, 65535, 65536, 65537, 1 << 20, len(data)} {
		for _, split := range []int{0, 1, n / 3, n / 2, n - 1, n} {
			if split < 0 || split > n {
				continue
			}
			a, b := data[:split], data[split:n]
			want := crc32.Checksum(data[:n], castagnoli)
			got := crc32cCombine(crc32.Checksum(a, castagnoli), crc32.Checksum(b, castagnoli), len(b))
			if got != want {
				t.Errorf("n %d split %d: combined %08x, want %08x", n, split, got, want)
			}
		}
	}
}

func TestMultModPZeroAndOne(t *testing.T) {
	if got := multModP(0, 0xdeadbeef); got != 0 {
		t.Fatalf("0 * b = %08x, want 0", got)
	}
	if got := multModP(1<<31, 0xdeadbeef); got != 0xdeadbeef {
		t.Fatalf("1 * b = %08x, want deadbeef", got)
	}
	// x^(8n) from the tables against n multiplications by x^8.
	p := uint32(1) << 31
	for n := range uint32(70000) {
		if got := xPow8ModP(n); got != p {
			t.Fatalf("x^(8*%d): %08x, want %08x", n, got, p)
		}
		p = multModP(p, 1<<23)
	}
}

// TestExtendBodyCRC checks the combined body CRC against a pass over the
// batch, for batches below, at and above combineMin, compressed or not.
func TestExtendBodyCRC(t *testing.T) {
	for _, tc := range []struct {
		n, size int
		c       kbatch.Compression
	}{
		{1, 1, kbatch.None}, {1, 900, kbatch.None}, {1, 1100, kbatch.None},
		{10, 100, kbatch.None}, {1000, 1000, kbatch.None}, {200, 500, kbatch.Zstd},
	} {
		t.Run(fmt.Sprintf("%dx%d/%v", tc.n, tc.size, tc.c), func(t *testing.T) {
			batch := encode(t, makeRecords(tc.n, tc.size, 1700000000000, "c"), tc.c)
			binary.BigEndian.PutUint64(batch, 0) // as it lies in the body
			for _, start := range []uint32{0, 0xffffffff, 0x12345678} {
				if got, want := extendBodyCRC(start, batch), crc32.Update(start, castagnoli, batch); got != want {
					t.Fatalf("%d bytes from %08x: %08x, want %08x", len(batch), start, got, want)
				}
			}
		})
	}
}

// TestWriterFileCRCCombined writes files of large batches (the combined
// path) and checks the writer's file CRC against a pass over the finished
// bytes, and the body CRC the file carries (ReadIndex).
func TestWriterFileCRCCombined(t *testing.T) {
	w := NewWriter(0)
	for i := range 20 {
		if _, err := w.Append(1, int32(i), encode(t, makeRecords(50+i, 200, 1700000000000, "f"), kbatch.None)); err != nil {
			t.Fatal(err)
		}
	}
	file := w.Finish()
	if got, want := w.FileCRC(), crc32.Checksum(file, castagnoli); got != want {
		t.Fatalf("FileCRC %08x, a pass over the file %08x", got, want)
	}
	if _, err := ReadIndex(file); err != nil { // checks the body CRC
		t.Fatalf("ReadIndex: %v", err)
	}
}

// BenchmarkExtendBodyCRC compares the combination with a pass over the
// batch, to place combineMin.
func BenchmarkExtendBodyCRC(b *testing.B) {
	for _, size := range []int{256, 512, 1 << 10, 4 << 10, 16 << 10, 1 << 20} {
		batch := make([]byte, size)
		for i := range batch {
			batch[i] = byte(i * 7)
		}
		binary.BigEndian.PutUint32(batch[batchCRCField:], crc32.Checksum(batch[batchCRCCovers:], castagnoli))
		b.Run(fmt.Sprintf("pass/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			crc := uint32(0)
			for b.Loop() {
				crc = crc32.Update(crc, castagnoli, batch)
			}
		})
		b.Run(fmt.Sprintf("combine/%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			crc := uint32(0)
			for b.Loop() {
				crc = crc32.Update(crc, castagnoli, batch[:batchCRCCovers])
				crc = crc32cCombine(crc, binary.BigEndian.Uint32(batch[batchCRCField:]), size-batchCRCCovers)
			}
		})
	}
}
