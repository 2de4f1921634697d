import { inflateRawSync } from 'node:zlib'

// gunzip as icebird's Avro reader calls it: raw deflate in, bytes out.
export function gunzip(data) {
  const out = inflateRawSync(data)
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength)
}
