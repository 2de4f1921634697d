package tableread

// Held is the bytes of rows r's read-ahead keeps.
func Held(r *Reader) int64 { return r.ahead.held() }
