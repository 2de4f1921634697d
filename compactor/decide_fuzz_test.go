package compactor

import (
	"strings"
	"testing"
)

// FuzzParseOrphanCursor: the orphan job's saved cursor of any text reads
// without a panic as a shard in range; the cursor formats back to text
// that reads the same, and its listing prefix stays under the root.
func FuzzParseOrphanCursor(f *testing.F) {
	for _, s := range []string{"", "00", "ff", "ff/v1/files/ff/x", "100", "0g", "-1", "+1", "7f/", "7f/a/b", "FF/k", "/k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := parseOrphanCursor(s)
		if c.shard < 0 || c.shard >= shards {
			t.Fatalf("parseOrphanCursor(%q): shard %d", s, c.shard)
		}
		if again := parseOrphanCursor(c.String()); again != c {
			t.Fatalf("parseOrphanCursor(%q) = %+v, formatted %q, read back as %+v", s, c, c.String(), again)
		}
		if p := c.prefix("v1/files/"); !strings.HasPrefix(p, "v1/files/") || len(p) != len("v1/files/")+3 {
			t.Fatalf("parseOrphanCursor(%q): prefix %q", s, p)
		}
		if n := c.next(false, ""); n.shard != (c.shard+1)%shards || n.after != "" {
			t.Fatalf("parseOrphanCursor(%q): next shard %+v", s, n)
		}
	})
}
