package tableread

// Held is the bytes of rows r's read-ahead keeps.
func Held(r *Reader) int64 { return r.ahead.held() }

// Scans is the scans of tables r made.
func Scans(r *Reader) int64 { return r.scans.Load() }

// Decoded is the data files r's scans read.
func Decoded(r *Reader) int64 { return r.stats.files.Load() }

// ViaArrow is the data files r's scans read through iceberg-go's Arrow
// scan (files with deletes, or not of floe's layout), not decoded from
// their column chunks.
func ViaArrow(r *Reader) int64 { return r.stats.viaArrow.Load() }

// FilesHeld is the bytes of decoded files' rows r keeps.
func FilesHeld(r *Reader) int64 { return r.files.held() }

// DropFiles turns r's decoded files kept off (tests that show what they
// save).
func DropFiles(r *Reader) { r.files = nil }

// DecodeBuffers is the bytes of free decode buffers r keeps and the
// buffers it handed out again.
func DecodeBuffers(r *Reader) (held, reused int64) { return r.alloc.stats() }

// TailsDecoded is the bytes of record tails (key, value and headers as
// a v2 record encodes them) r's scans decoded.
func TailsDecoded(r *Reader) int64 { return r.stats.tails.Load() }

// Planned is the snapshots r planned whole (plan.go).
func Planned(r *Reader) int64 { return r.plans.made.Load() }

// DropPlans makes r plan each scan with its filter, as iceberg-go does
// (tests that compare).
func DropPlans(r *Reader) { r.plans = nil }
