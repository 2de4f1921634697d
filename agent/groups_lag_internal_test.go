package agent

import "testing"

func TestTimeToRetention(t *testing.T) {
	const now, day = int64(10_000_000), int64(86_400_000)
	for _, tc := range []struct {
		name             string
		retention, app   int64
		consume, produce float64
		want             int64
	}{
		{"infinite retention", -1, now - 1000, 0, 10, -1},
		{"caught up", day, 0, 0, 0, -1},
		{"already past", 1000, now - 2000, 1, 10, 0},
		{"stopped consumer", day, now - 1000, 0, 10, day - 1000},
		{"half the produce rate doubles the time", day, now - 1000, 5, 10, 2 * (day - 1000)},
		{"keeps up", day, now - 1000, 10, 10, -1},
	} {
		if got := timeToRetention(tc.retention, tc.app, now, tc.consume, tc.produce); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
