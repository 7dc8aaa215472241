package process

import "testing"

func TestServerEnviron(t *testing.T) {
	got := ServerEnviron([]string{"PATH=/bin", "KUBE_FEATURE_WatchListClient=false", "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=true", "KUBECONFIG=/x"})
	if len(got) != 2 || got[0] != "PATH=/bin" || got[1] != "KUBECONFIG=/x" {
		t.Errorf("ServerEnviron: %v, want PATH and KUBECONFIG only", got)
	}
}
