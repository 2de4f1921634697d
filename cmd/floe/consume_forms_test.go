package main_test

import (
	"slices"
	"strings"
	"testing"
)

// floe consume speaks kcat's and rpk's forms: -f with kcat's letters,
// -o -N / +N / @TIME / an offset, several -partition, -c N, -e; headers
// print escaped; an offset outside the log names its partition.
func TestConsumeKcatForms(t *testing.T) {
	_, floe := devFloe(t)
	if _, errs, code := floe("", "topic", "create", "kc", "-partitions", "3"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := floe("a\nb\nc\nd\ne\nf\n", "produce", "kc", "-partition", "0", "-header", "h,1=v=x\n"); code != 0 {
		t.Fatal(errs)
	}
	if _, errs, code := floe("k1:x\nk2:y\n", "produce", "kc", "-partition", "1", "-key-separator", ":"); code != 0 {
		t.Fatal(errs)
	}
	// sorted is out's lines in order: one subscription over several
	// partitions keeps each partition's order, not an order between them.
	sorted := func(out string) string {
		lines := strings.SplitAfter(out, "\n")
		slices.Sort(lines)
		return strings.Join(lines, "")
	}
	for _, tc := range []struct {
		args     []string
		want     string
		anyOrder bool // partitions interleave
	}{
		{[]string{"-f", `%t %p %o %k=%s %h\n`, "-o", "-2", "-partition", "0"}, "kc 0 4 =e h\\,1=v\\=x\\n\nkc 0 5 =f h\\,1=v\\=x\\n\n", false},
		{[]string{"-o", "+4", "-partition", "0"}, "e\nf\n", false},
		{[]string{"-from", "-1", "-partition", "0,1", "-f", `%p:%o %k %K %S\n`}, "0:5  -1 1\n1:1 k2 2 1\n", true},
		{[]string{"-o", "2", "-partition", "0", "-partition", "1", "-c", "1", "-e", "-f", `%o\n`}, "2\n", false},
		{[]string{"-o", "@0", "-partition", "1"}, "x\ny\n", false},
		{[]string{"-partition", "0", "-c", "2", "-print-headers", "-separator", "|"}, "h\\,1=v\\=x\\n|a\nh\\,1=v\\=x\\n|b\n", false},
	} {
		out, errs, code := floe("", append([]string{"consume", "kc"}, tc.args...)...)
		if tc.anyOrder {
			out = sorted(out)
		}
		if code != 0 || out != tc.want {
			t.Errorf("consume %q: exit %d, %q (stderr %s), want %q", tc.args, code, out, errs, tc.want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-from", "99"}, "offset 99 is outside partition 0, which holds offsets 0 to 5"},
		{[]string{"-from", "99", "-follow"}, "offset 99 is outside partition 0"},
		{[]string{"-o", "bogus"}, `flag -o: "bogus" is neither an output format`},
		{[]string{"-f", "%q"}, "flag -f: unknown letter %q"},
		{[]string{"-follow", "-e"}, "exclude each other"},
	} {
		_, errs, code := floe("", append([]string{"consume", "kc"}, tc.args...)...)
		if code != 1 || !strings.Contains(errs, tc.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("consume %q: exit %d, %q, want one line with %q", tc.args, code, errs, tc.want)
		}
	}
}
