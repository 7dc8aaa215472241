package scenarios

import (
	"testing"
	"time"
)

// S1's first-success bound follows the reflector's backoff steps: a quiet
// machine's outage keeps FirstSuccessBound, a longer one the step it can
// have pending, never past the 30 s cap's longest wait.
func TestFirstSuccessBound(t *testing.T) {
	for _, c := range []struct {
		outage, want time.Duration
	}{
		{3 * time.Second, FirstSuccessBound},
		{6 * time.Second, FirstSuccessBound},
		// 13 s failing: waits of 0.8, 1.6, 3.2 and 6.4 s fit (12 s), the
		// 12.8 s step is pending: at most 25.6 s.
		{12 * time.Second, rbacWindow + 25600*time.Millisecond + firstSuccessSlack},
		{time.Hour, rbacWindow + 60*time.Second + firstSuccessSlack},
	} {
		if got := firstSuccessBound(c.outage); got != c.want {
			t.Errorf("firstSuccessBound(%s) = %s, want %s", c.outage, got, c.want)
		}
	}
	if firstSuccessSlack <= 0 {
		t.Errorf("firstSuccessSlack %s: FirstSuccessBound no longer covers a 6 s outage's step", firstSuccessSlack)
	}
}
