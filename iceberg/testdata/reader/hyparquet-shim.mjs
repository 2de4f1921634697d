import { parquetReadObjects as readObjects } from 'hyparquet'

export * from 'hyparquet'

// parquetReadObjects with binary columns as bytes (see hooks.mjs).
export function parquetReadObjects(options) {
  return readObjects({ ...options, utf8: false })
}
