package lines

import (
	"strings"
	"testing"
)

func TestLast(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"a\nb\nc\n\n", 2, "b|c"},
		{"a\nb", 5, "a|b"},
		{"", 3, ""},
	} {
		if got := strings.Join(Last(tc.s, tc.n), "|"); got != tc.want {
			t.Errorf("Last(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	if got := OnOneLine("  x\ny\nz  \n", 2); got != "y / z" {
		t.Errorf("OnOneLine = %q", got)
	}
}
