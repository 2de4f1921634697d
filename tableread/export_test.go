package tableread

// Held is the bytes of rows r's read-ahead keeps.
func Held(r *Reader) int64 { return r.ahead.held() }

// Scans is the scans of tables r made.
func Scans(r *Reader) int64 { return r.scans.Load() }

// Decoded is the data files r's scans read.
func Decoded(r *Reader) int64 { return r.decoded.Load() }

// FilesHeld is the bytes of decoded files' rows r keeps.
func FilesHeld(r *Reader) int64 { return r.files.held() }

// DropFiles turns r's decoded files kept off (tests that show what they
// save).
func DropFiles(r *Reader) { r.files = nil }
