package nodeid

import "testing"

func TestString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   ID
		want string
	}{
		{ID{Target: "cache"}, "cache"},
		{ID{Target: "cache", Node: "10.0.0.1:6379"}, "cache/10.0.0.1:6379"},
	} {
		if got := tc.id.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.id, got, tc.want)
		}
	}
}
