package tableread

// Held is the bytes of rows r's read-ahead keeps.
func Held(r *Reader) int64 { return r.ahead.held() }

// Scans is the scans of tables r made.
func Scans(r *Reader) int64 { return r.scans.Load() }
