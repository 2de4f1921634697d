package logfile

// CRC-32C of a concatenation from the CRCs of its parts.
//
// A batch handed to AppendParsed has had its CRC-32C checked: the CRC
// field (bytes 17..20) is the CRC-32C of bytes 21 to the end. The file's
// body CRC must cover the whole batch, so instead of a second pass over
// the batch the writer extends the body CRC over its first 21 bytes and
// then combines it with the batch's own CRC:
//
//	crc(A || B) = crc(A) * x^(8*len(B)) mod P  xor  crc(B)
//
// (with the usual pre- and post-inversion, which the formula keeps).
// As zlib's crc32_combine, for the reflected Castagnoli polynomial, with
// x^(8*len) from tables: at most four multiplications in GF(2)[x]/P
// instead of a pass over len bytes.

// castagnoliReversed is the Castagnoli polynomial, bit-reversed.
const castagnoliReversed = 0x82f63b78

// xPow8 is x^(8*n) mod P for every n below 2^32, as four tables of its
// bytes: xPow8[k][j] = x^(8*j*256^k) mod P. A length then costs at most
// three multiplications (one below 64 KiB), not one per bit.
var xPow8 = func() (t [4][256]uint32) {
	one := uint32(1) << 31 // x^0
	x8 := uint32(1) << 23  // x^8
	for k := range t {
		t[k][0] = one
		for j := 1; j < 256; j++ {
			t[k][j] = multModP(t[k][j-1], x8)
		}
		x8 = multModP(t[k][255], x8) // x^(8*256^(k+1))
	}
	return t
}()

// multModP returns a*b mod P, both reflected (bit 31 is x^0), without a
// branch on the data.
func multModP(a, b uint32) uint32 {
	var p uint32
	for i := 31; i >= 0; i-- {
		p ^= b & -(a >> uint(i) & 1)
		b = b>>1 ^ castagnoliReversed&-(b&1)
	}
	return p
}

// xPow8ModP returns x^(8*n) mod P.
func xPow8ModP(n uint32) uint32 {
	p := xPow8[0][n&0xff]
	for k := 1; n>>(8*k) != 0; k++ {
		p = multModP(p, xPow8[k][n>>(8*k)&0xff])
	}
	return p
}

// crc32cCombine returns the CRC-32C of A||B from crcA, the CRC-32C of A,
// crcB, that of B, and B's length (below 4 GiB: a batch's is below 2 GiB).
func crc32cCombine(crcA, crcB uint32, lenB int) uint32 {
	if lenB <= 0 {
		return crcA
	}
	return multModP(xPow8ModP(uint32(lenB)), crcA) ^ crcB
}
