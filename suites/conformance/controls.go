package conformance

import (
	"errors"
	"io"
	"net/http"

	"k8s.io/client-go/rest"
)

// Broken client set-ups shared by several negative controls.

// endOfWatchAsError wraps cfg's transport so that a watch body ending in EOF
// or an unexpected EOF returns a plain error instead.
func endOfWatchAsError(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return eofAsError{rt} })
	return cfg
}

type eofAsError struct{ next http.RoundTripper }

func (t eofAsError) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil && req.URL.Query().Get("watch") == "true" {
		resp.Body = eofAsErrorBody{resp.Body}
	}
	return resp, err
}

type eofAsErrorBody struct{ io.ReadCloser }

func (b eofAsErrorBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("watch stream ended (reported as an error by a broken client)")
	}
	return n, err
}
