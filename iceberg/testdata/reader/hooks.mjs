// Module resolution hooks: the test-side shims around icebird, which
// otherwise runs as published.
//
// 1. icebird's Avro reader imports gunzip from hyparquet-compressors to
//    inflate "deflate" blocks; that decoder fails on the blocks Go's
//    compress/flate writes ("RangeError: offset is out of bounds"). Avro's
//    deflate codec is raw deflate (RFC 1951): inflate-shim.mjs gives it
//    Node's zlib.inflateRawSync instead.
// 2. icebird reads Parquet with hyparquet's default utf8: true, which
//    decodes every un-annotated BYTE_ARRAY (Iceberg's binary: our key and
//    value) as a UTF-8 string, losing bytes. hyparquet-shim.mjs passes
//    utf8: false, so binary stays bytes; annotated strings still decode.
const shims = {
  'hyparquet-compressors': { from: '/icebird/src/avro/avro.read.js', to: './inflate-shim.mjs' },
  hyparquet: { from: '/icebird/src/read.js', to: './hyparquet-shim.mjs' },
}

export async function resolve(specifier, context, next) {
  const shim = shims[specifier]
  if (shim && context.parentURL?.endsWith(shim.from)) {
    return { url: new URL(shim.to, import.meta.url).href, shortCircuit: true }
  }
  return next(specifier, context)
}
