package postgres

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParsePayload: any notification payload (a NOTIFY anyone with the
// database's password can send) decodes without a panic, to All or to
// partitions that re-encode to a payload decoding the same.
func FuzzParsePayload(f *testing.F) {
	for _, s := range []string{"", "*", "1:0:10", "1:0:10,2:3:99", "1:0", "1:0:10,", "x:0:1", "1:2147483648:1",
		"1:0:-5", "-1:-1:-1", "1:0:10:11", ",,", "1:0:9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := ParsePayload(s)
		if n.All {
			if len(n.Partitions) != 0 {
				t.Fatalf("ParsePayload(%q): All with %d partitions", s, len(n.Partitions))
			}
			return
		}
		if len(n.Partitions) != strings.Count(s, ",")+1 {
			t.Fatalf("ParsePayload(%q): %d partitions", s, len(n.Partitions))
		}
		items := make([]string, len(n.Partitions))
		for i, p := range n.Partitions {
			items[i] = strconv.FormatInt(p.TopicID, 10) + ":" + strconv.FormatInt(int64(p.Partition), 10) + ":" + strconv.FormatInt(p.HighWatermark, 10)
		}
		again := ParsePayload(strings.Join(items, ","))
		if again.All || len(again.Partitions) != len(n.Partitions) {
			t.Fatalf("ParsePayload(%q) = %+v; re-encoded it reads %+v", s, n, again)
		}
		for i := range n.Partitions {
			if again.Partitions[i] != n.Partitions[i] {
				t.Fatalf("ParsePayload(%q) = %+v; re-encoded it reads %+v", s, n, again)
			}
		}
	})
}
