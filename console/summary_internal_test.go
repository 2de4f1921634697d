package console

import (
	"slices"
	"testing"
)

func TestNextBatch(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	ones := []int64{1, 1, 1, 1, 1}
	heavy := []int64{5, 1, 100, 1, 1}
	for _, tc := range []struct {
		name      string
		weights   []int64
		after     string
		items     int
		maxWeight int64
		want      []string
	}{
		{"from the start", ones, "", 2, 10, []string{"a", "b"}},
		{"after a name", ones, "b", 2, 10, []string{"c", "d"}},
		{"wraps around", ones, "d", 3, 10, []string{"e", "a", "b"}},
		{"after a deleted name", ones, "bb", 2, 10, []string{"c", "d"}},
		{"after the last", ones, "z", 2, 10, []string{"a", "b"}},
		{"never more than all", ones, "c", 9, 10, []string{"d", "e", "a", "b", "c"}},
		{"weight bound", heavy, "", 5, 6, []string{"a", "b"}},
		{"the first always, however heavy", heavy, "b", 5, 6, []string{"c"}},
		{"weight bound after the heavy one", heavy, "c", 5, 6, []string{"d", "e"}},
		{"no items", ones, "", 0, 10, nil},
	} {
		if got := nextBatch(names, tc.weights, tc.after, tc.items, tc.maxWeight); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := nextBatch(nil, nil, "a", 3, 3); got != nil {
		t.Errorf("no names: %v", got)
	}
}
