package report

import "testing"

func TestErrorTextMasks(t *testing.T) {
	text := `Get "https://127.0.0.1:43211/api/v1/namespaces/informer-conformance-x7k2p/pods?resourceVersion=812": dial tcp 127.0.0.1:43211: connect: connection refused after 3s`
	if got, want := NormaliseError(text, "informer-conformance-x7k2p"), `Get <url>: dial tcp <addr>: connect: connection refused after Ns`; got != want {
		t.Errorf("NormaliseError:\n got %s\nwant %s", got, want)
	}
	if got, want := StableErrorText(text, "informer-conformance-x7k2p"), `Get <url>: dial tcp <addr>: connect: connection refused after <duration>`; got != want {
		t.Errorf("StableErrorText:\n got %s\nwant %s", got, want)
	}
}
