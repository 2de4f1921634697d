package main

import (
	"context"
	"strings"
	"testing"
)

func TestReadLines(t *testing.T) {
	cases := []struct {
		in      string
		limit   int
		want    []string
		wantErr string
	}{
		{"", 10, nil, ""},
		{"a\nb\n", 10, []string{"a", "b"}, ""},
		{"a\nb", 10, []string{"a", "b"}, ""},
		{"\n\n", 10, []string{"", ""}, ""},
		{strings.Repeat("x", 10) + "\n", 10, []string{strings.Repeat("x", 10)}, ""},
		{"ok\n" + strings.Repeat("x", 11) + "\nnext\n", 10, []string{"ok"}, "line 2: longer than the record limit of 7 bytes"},
		{"ok\n" + strings.Repeat("x", 200000), 100000, []string{"ok"}, "line 2:"},
		{strings.Repeat("y", 150000) + "\n", 200000, []string{strings.Repeat("y", 150000)}, ""},
	}
	for _, c := range cases {
		out := make(chan inputLine, 4)
		go readLines(context.Background(), strings.NewReader(c.in), c.limit, 7, out)
		var got []string
		var gotErr string
		for l := range out {
			if l.err != nil {
				gotErr = l.err.Error()
				continue
			}
			if l.n != len(got)+1 {
				t.Fatalf("%.20q: line numbered %d, want %d", c.in, l.n, len(got)+1)
			}
			got = append(got, string(l.data))
		}
		if strings.Join(got, "|") != strings.Join(c.want, "|") || !strings.HasPrefix(gotErr, c.wantErr) || (c.wantErr == "") != (gotErr == "") {
			t.Errorf("%.20q limit %d: lines %d %.40q, err %q; want %d lines, err %q", c.in, c.limit, len(got), got, gotErr, len(c.want), c.wantErr)
		}
	}
}

func TestPartitionFlag(t *testing.T) {
	for s, want := range map[string]string{"0": "", "-1": "", "2147483647": "", "-2": "out of range", "2147483648": "out of range",
		"4294967296": "out of range", "1e3": "not a number", "": "not a number"} {
		f := partitionFlag{p: -1, what: "by key"}
		err := f.Set(s)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("-partition %q: %v, want %q", s, err, want)
		}
		if err == nil && f.String() != s {
			t.Errorf("-partition %q is %s", s, f.String())
		}
	}
}
