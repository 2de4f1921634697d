package group

import (
	"slices"
	"testing"
)

// FuzzDecodeTPs: a stored partition list of any text decodes without a
// panic, to an error or to partitions that encode back (EncodeTPs) to a
// list that decodes the same.
func FuzzDecodeTPs(f *testing.F) {
	for _, s := range []string{"", "1:0", "1:0,1:1,2:7", "1:", ":1", "1:0,", ",", "1:2147483648", "-1:-1",
		"9223372036854775807:2147483647", "1:0:0", "a:b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := DecodeTPs(s)
		if err != nil {
			return
		}
		text := EncodeTPs(ps)
		again, err := DecodeTPs(text)
		if err != nil || !slices.Equal(again, ps) {
			t.Fatalf("DecodeTPs(%q) = %v, encoded %q, decoded again %v (%v)", s, ps, text, again, err)
		}
	})
}
