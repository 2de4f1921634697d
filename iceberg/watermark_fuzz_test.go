package iceberg_test

import (
	"errors"
	"testing"

	"github.com/floe-broker/floe/iceberg"
)

// FuzzParseWatermark: the watermark is a table property anyone with
// write access can set (Spark's ALTER TABLE ... SET TBLPROPERTIES), so any
// text must parse without a panic to an error wrapping
// ErrInvalidWatermark, or to a watermark of non-negative partitions and
// offsets that formats back to text that parses to the same watermark.
func FuzzParseWatermark(f *testing.F) {
	for _, s := range []string{"", "0:120,1:98", "0:0", "3:9223372036854775807", "0:1,0:2", "-1:5", "0:-5",
		"2147483648:1", "0:1,", ",", "a:b", "0:+7", " 0:1", "0:1:2", "00:01"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := iceberg.ParseWatermark(s)
		if err != nil {
			if !errors.Is(err, iceberg.ErrInvalidWatermark) {
				t.Fatalf("ParseWatermark(%q): %v does not wrap ErrInvalidWatermark", s, err)
			}
			return
		}
		for p, off := range w {
			if p < 0 || off < 0 {
				t.Fatalf("ParseWatermark(%q) accepted partition %d at offset %d", s, p, off)
			}
		}
		text := iceberg.FormatWatermark(w)
		again, err := iceberg.ParseWatermark(text)
		if err != nil || !again.Equal(w) {
			t.Fatalf("ParseWatermark(%q) = %v, formatted %q, read back as %v (%v)", s, w, text, again, err)
		}
	})
}
