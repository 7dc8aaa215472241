package probe

import "strings"

// ErrorClass and report.StableErrorText split an error an informer's
// watch error handler gets into what two runs of the same code share.

// transportKinds name the kinds of error without an API status, in the
// order they are looked for in the text.
var transportKinds = []struct{ needle, kind string }{
	{"connection refused", "connection refused"},
	{"connection reset", "connection reset"},
	{"http2: client connection lost", "connection lost"},
	{"broken pipe", "broken pipe"},
	{"i/o timeout", "i/o timeout"},
	{"context canceled", "context canceled"},
	{"context deadline exceeded", "deadline exceeded"},
	{"Client.Timeout", "deadline exceeded"},
	{"x509:", "TLS"},
	{"tls:", "TLS"},
	{"unexpected EOF", "EOF"},
	{"EOF", "EOF"},
	{"unable to decode", "decoding"},
	{"very short watch", "very short watch"},
}

// ErrorClass is the class of a watch error handler's error: the
// reflector's operation ("list" for "failed to list ...", "watch" for
// "failed to watch ...", else none) and the error's API status reason, or
// the kind of its transport error, or "other".
func ErrorClass(e WatchError) string {
	op := ""
	switch lower := strings.ToLower(e.Err); {
	case strings.Contains(lower, "failed to list"):
		op = "list "
	case strings.Contains(lower, "failed to watch"):
		op = "watch "
	}
	if e.Reason != "" {
		return op + e.Reason
	}
	for _, k := range transportKinds {
		if strings.Contains(e.Err, k.needle) {
			return op + k.kind
		}
	}
	return op + "other"
}
