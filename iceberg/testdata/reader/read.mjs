// Reads a floe Iceberg table with icebird and prints its rows as JSON
// lines, for floe's tests to compare with what they wrote.
//
//   node --import ./register.mjs read.mjs TABLE_LOCATION METADATA_FILE PROXY
//
// The tests serve the table's files (S3 objects or local files) over HTTP
// at PROXY/obj?loc=LOCATION, byte for byte with range requests; fetch is
// pointed there for s3:// locations (which icebird turns into AWS URLs)
// and local paths. Parsing is icebird's and hyparquet's alone.
import { icebergRead } from 'icebird'

const [tableUrl, metadataFileName, proxy] = process.argv.slice(2)
if (!proxy) {
  console.error('usage: read.mjs TABLE_LOCATION METADATA_FILE PROXY')
  process.exit(2)
}

const realFetch = globalThis.fetch
globalThis.fetch = (input, init) => {
  const url = typeof input === 'string' ? input : input.url
  let loc = url
  const m = url.match(/^https:\/\/([^/]+)\.s3\.amazonaws\.com(\/.*)$/)
  if (m) loc = `s3://${m[1]}${m[2]}`
  else if (url.startsWith('file://')) loc = url.slice('file://'.length)
  else if (!url.startsWith('/')) return realFetch(input, init)
  return realFetch(`${proxy}/obj?loc=${encodeURIComponent(loc)}`, init)
}

const b64 = v => (v === undefined || v === null ? null : Buffer.from(v).toString('base64'))
const time = v => (v instanceof Date ? v.getTime() : Number(v))

// Typed columns (value_fields, a struct): longs come back as BigInt,
// timestamps as Date; printed as decimal strings and ISO strings.
const plain = (_, v) => (typeof v === 'bigint' ? v.toString() : v)

const rows = await icebergRead({ tableUrl, metadataFileName })
for (const r of rows) {
  console.log(JSON.stringify({
    ...('value_fields' in r ? { value_fields: r.value_fields ?? null } : {}),
    partition: Number(r.partition),
    offset: String(r.offset),
    timestamp_ms: time(r.timestamp),
    append_time_ms: time(r.append_time),
    key: b64(r.key),
    value: b64(r.value),
    headers: (r.headers ?? []).map(h => ({ key: h.key, value: b64(h.value) })),
  }, plain))
}
