package report

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
// stable part; compare lists such a change with one run a side. The
// probe records it (package probe: ErrorClass, the class), compare masks
// stored texts again with it.

var (
	// errPreviousAttempt is client-go's note of an earlier failed attempt of a
	// retried request (rest/with_retry.go: "... - error from a previous
	// attempt: ..."): whether there was one is the fault's timing.
	errPreviousAttempt = regexp.MustCompile(` - error from a previous attempt: .*$`)
	errURL             = regexp.MustCompile(`"?https?://[^"\s]*"?`)
	errHostPort        = regexp.MustCompile(`\[?[0-9a-fA-F.:]+\]?:[0-9]+`)
	errUID             = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	errPointer         = regexp.MustCompile(`\b0x[0-9a-f]+\b`)
	errDuration        = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h)([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))*\b`)
	// errGeneratedName is a name made by the API server from a generateName
	// (apimachinery pkg/util/rand String: five of its alphabet's letters).
	errGeneratedName = regexp.MustCompile(`\b([a-z0-9]+-)+[bcdfghjklmnpqrstvwxz2456789]{5}\b`)
	errNumber        = regexp.MustCompile(`\b[0-9]+\b`)
	// errAuthorizerReason is what kube-apiserver appends to a Forbidden
	// message: its authorizer's reason (apiserver pkg/endpoints/handlers/
	// responsewriters/errors.go forbiddenMessage, then ": " and the reason),
	// which names the server's RBAC state: a restarted apiserver whose
	// RBAC caches are not synced yet lists the cluster roles it did not
	// find ("rbac: RBAC: [clusterrole... not found, ...]"), later none.
	// The server's timing, not the client's: dropped.
	errAuthorizerReason = regexp.MustCompile(`( is forbidden: User "[^"]*" cannot [^:]*): .*$`)
)

var (
	errQuotedURL = regexp.MustCompile(`"https?://[^"]*"`)
	errDigits    = regexp.MustCompile(`[0-9]+`)
)

// NormaliseError replaces in an error text what differs between runs, more
// coarsely than StableErrorText (every run of digits, even inside a word):
// quoted URLs, addresses, the namespace ("<ns>"; none if empty), numbers
// ("N"). The clientset calls' errors S26 and S33 observe.
func NormaliseError(text, namespace string) string {
	text = errQuotedURL.ReplaceAllString(text, "<url>")
	text = errHostPort.ReplaceAllString(text, "<addr>")
	text = namespaced(text, namespace)
	return errDigits.ReplaceAllString(text, "N")
}

// namespaced is text with the namespace (none if empty) as "<ns>".
func namespaced(text, namespace string) string {
	if namespace == "" {
		return text
	}
	return strings.ReplaceAll(text, namespace, "<ns>")
}

// StableErrorText is text's stable part: without client-go's note of a
// previous attempt and a Forbidden answer's authorizer reason; URLs,
// addresses, UIDs, pointers, durations, generated names and numbers masked
// (resource versions, line numbers), and the informer's namespace (none if
// empty) as "<ns>". Identifiers with digits (v1, k8s, http2)
// are kept.
func StableErrorText(text, namespace string) string {
	text = errPreviousAttempt.ReplaceAllString(text, "")
	text = errAuthorizerReason.ReplaceAllString(text, "$1")
	text = errURL.ReplaceAllString(text, "<url>")
	text = errHostPort.ReplaceAllString(text, "<addr>")
	text = namespaced(text, namespace)
	text = errUID.ReplaceAllString(text, "<uid>")
	text = errPointer.ReplaceAllString(text, "<ptr>")
	text = errDuration.ReplaceAllString(text, "<duration>")
	text = errGeneratedName.ReplaceAllString(text, "<name>")
	return errNumber.ReplaceAllString(text, "N")
}
