package probe

import (
	"regexp"
	"strings"
)

// An error an informer's watch error handler gets under a fault has a part
// that two runs of the same code share and a part they do not. Which
// errors come at all, how many, and where a retry wrapped one depend on
// the fault's timing; addresses, ports, resource versions, durations, UIDs
// and generated names differ from run to run. What stays is the stable
// part: the error's class (the operation, and its API status reason or its
// kind of transport error) and its text with the varying values masked. A
// client-go release that changes what its handlers receive changes the
// stable part; compare lists such a change with one run a side.

var (
	// previousAttempt is client-go's note of an earlier failed attempt of a
	// retried request (rest/with_retry.go: "... - error from a previous
	// attempt: ..."): whether there was one is the fault's timing.
	previousAttempt = regexp.MustCompile(` - error from a previous attempt: .*$`)
	anyURL          = regexp.MustCompile(`"?https?://[^"\s]*"?`)
	uid             = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	pointer         = regexp.MustCompile(`\b0x[0-9a-f]+\b`)
	duration        = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h)([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))*\b`)
	// generatedName is a name made by the API server from a generateName
	// (apimachinery pkg/util/rand String: five of its alphabet's letters).
	generatedName = regexp.MustCompile(`\b([a-z0-9]+-)+[bcdfghjklmnpqrstvwxz2456789]{5}\b`)
	number        = regexp.MustCompile(`\b[0-9]+\b`)
)

// StableErrorText is text's stable part: without client-go's note of a
// previous attempt, URLs, addresses, UIDs, pointers, durations, generated
// names and numbers masked (resource versions, line numbers), and the
// informer's namespace as "<ns>". Identifiers with digits (v1, k8s, http2)
// are kept.
func StableErrorText(text, namespace string) string {
	text = previousAttempt.ReplaceAllString(text, "")
	text = anyURL.ReplaceAllString(text, "<url>")
	text = hostPort.ReplaceAllString(text, "<addr>")
	text = namespaced(text, namespace)
	text = uid.ReplaceAllString(text, "<uid>")
	text = pointer.ReplaceAllString(text, "<ptr>")
	text = duration.ReplaceAllString(text, "<duration>")
	text = generatedName.ReplaceAllString(text, "<name>")
	return number.ReplaceAllString(text, "N")
}

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
