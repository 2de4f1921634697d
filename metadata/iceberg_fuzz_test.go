package metadata

import (
	"maps"
	"testing"
)

// FuzzParseIcebergCursor: any lease cursor text parses without a panic;
// what parses holds non-negative partitions and offsets and formats back
// (FormatIcebergCursor) to a cursor that parses to the same watermark.
// A cursor of another topic never parses.
func FuzzParseIcebergCursor(f *testing.F) {
	for _, s := range []string{"42 ", "42 0:1200,1:998", "42 0:5 s=7@1700000000000", "42 0:1,0:2", "42 -1:3",
		"42 0:-3", "41 0:1", "42", "42 0:1 t=1/2/3", "42 ,", "42 0:", "42 2147483648:1", "+42 0:1", "042 0:1"} {
		f.Add(s, int64(42))
	}
	f.Fuzz(func(t *testing.T, s string, topicID int64) {
		wm, ok := ParseIcebergCursor(s, topicID)
		if !ok {
			return
		}
		if id, idOK := IcebergCursorTopic(s); !idOK || id != topicID {
			t.Fatalf("ParseIcebergCursor(%q, %d) accepted the cursor of topic %d (%v)", s, topicID, id, idOK)
		}
		for p, o := range wm {
			if p < 0 || o < 0 {
				t.Fatalf("ParseIcebergCursor(%q) accepted partition %d at %d", s, p, o)
			}
		}
		text := FormatIcebergCursor(topicID, wm)
		again, ok := ParseIcebergCursor(text, topicID)
		if !ok || !maps.Equal(again, wm) {
			t.Fatalf("ParseIcebergCursor(%q) = %v, formatted %q, read back as %v (%v)", s, wm, text, again, ok)
		}
	})
}

// FuzzParseIcebergSnapshot: any cursor text parses without a panic, and
// a snapshot parsed appends back (WithIcebergSnapshot) to one that parses
// the same.
func FuzzParseIcebergSnapshot(f *testing.F) {
	for _, s := range []string{"", "42 0:5 s=7@1700000000000", "42 0:5 s=7", "42 0:5 s=@", "42 s=1@2 s=3@4",
		"s=1@2", " s=-1@-2", "42 0:1 s=9223372036854775808@1", "42 0:1 s=1@2@3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ms, ok := ParseIcebergSnapshot(s)
		if !ok {
			return
		}
		id2, ms2, ok := ParseIcebergSnapshot(WithIcebergSnapshot(s, id, ms))
		if !ok || id2 != id || ms2 != ms {
			t.Fatalf("ParseIcebergSnapshot(%q) = %d@%d; appended again it reads %d@%d (%v)", s, id, ms, id2, ms2, ok)
		}
	})
}
