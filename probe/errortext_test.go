package probe

import (
	"testing"

	"github.com/informer-conformance/informer-conformance/report"
)

// The texts are what informers' watch error handlers got in this suite's
// runs (kind of fault: S9 refused connections, S15 rotated credentials,
// S5 compaction, S33 Table lists, S14 very short watches, S2 a silent
// connection), with the addresses, namespaces and resource versions of
// those runs.
func TestStableErrorText(t *testing.T) {
	const ns = "informer-conformance-x7k2p"
	for _, tc := range []struct {
		name, err, reason string
		class, stable     string
	}{
		{"refused list", `failed to list *v1.Pod: Get "https://127.0.0.1:43127/api/v1/namespaces/informer-conformance-x7k2p/pods?limit=500&resourceVersion=0": dial tcp 127.0.0.1:43127: connect: connection refused`, "",
			"list connection refused", `failed to list *v1.Pod: Get <url>: dial tcp <addr>: connect: connection refused`},
		{"unauthorised after a reset", `Unauthorized - error from a previous attempt: read tcp 127.0.0.1:51234->127.0.0.1:43127: read: connection reset by peer`, "Unauthorized",
			"Unauthorized", `Unauthorized`},
		{"unauthorised list", `failed to list *v1.Pod: Unauthorized`, "Unauthorized",
			"list Unauthorized", `failed to list *v1.Pod: Unauthorized`},
		{"expired", `too old resource version: 1234 (5678)`, "Expired",
			"Expired", `too old resource version: N (N)`},
		{"table", `failed to list *v1.Pod: no kind "Table" is registered for version "meta.k8s.io/v1" in scheme "pkg/runtime/scheme.go:100"`, "",
			"list other", `failed to list *v1.Pod: no kind "Table" is registered for version "meta.k8s.io/v1" in scheme "pkg/runtime/scheme.go:N"`},
		{"lost", `http2: client connection lost`, "", "connection lost", `http2: client connection lost`},
		{"very short", `very short watch: k8s.io/client-go/informers/factory.go:160: Unexpected watch close - watch lasted less than a second and no items received`, "",
			"very short watch", `very short watch: k8s.io/client-go/informers/factory.go:N: Unexpected watch close - watch lasted less than a second and no items received`},
		{"timeout", `failed to list *v1.Pod: Get "https://127.0.0.1:43127/api/v1/namespaces/informer-conformance-x7k2p/pods?limit=500": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, "",
			"list deadline exceeded", `failed to list *v1.Pod: Get <url>: context deadline exceeded (Client.Timeout exceeded while awaiting headers)`},
		{"throttled", `the server has received too many requests and has asked us to try again later (get pods) after 1.5s`, "TooManyRequests",
			"TooManyRequests", `the server has received too many requests and has asked us to try again later (get pods) after <duration>`},
		{"uid and generated name", `Operation cannot be fulfilled on pods "w-bx7kq": Precondition failed: UID in precondition: 0f6b1f5e-3c2a-4c53-9a8e-2b8f3e0b7c11, UID in object meta: `, "Conflict",
			"Conflict", `Operation cannot be fulfilled on pods "<name>": Precondition failed: UID in precondition: <uid>, UID in object meta: `},
		{"namespace", `pods is forbidden: User "informer-conformance-user" cannot list resource "pods" in API group "" in the namespace "informer-conformance-x7k2p"`, "Forbidden",
			"Forbidden", `pods is forbidden: User "informer-conformance-user" cannot list resource "pods" in API group "" in the namespace "<ns>"`},
		// A restarted kube-apiserver before its RBAC caches synced (S12 on
		// client-go v0.34.0; on v0.34.13 the same answer came without the
		// reason): the stable text has none.
		{"forbidden, roles not yet found", `failed to list *v1.Pod: pods is forbidden: User "test-user" cannot list resource "pods" in API group "" in the namespace "informer-conformance-x7k2p": rbac: RBAC: [clusterrole.rbac.authorization.k8s.io "informer-conformance:test-user" not found, clusterrole.rbac.authorization.k8s.io "system:discovery" not found]`, "Forbidden",
			"list Forbidden", `failed to list *v1.Pod: pods is forbidden: User "test-user" cannot list resource "pods" in API group "" in the namespace "<ns>"`},
	} {
		e := WatchError{Err: tc.err, Reason: tc.reason}
		if got := ErrorClass(e); got != tc.class {
			t.Errorf("%s: class %q, want %q", tc.name, got, tc.class)
		}
		if got := report.StableErrorText(tc.err, ns); got != tc.stable {
			t.Errorf("%s: stable text\n  %q\nwant\n  %q", tc.name, got, tc.stable)
		}
	}
}

// TestStableErrorTextOfTwoRuns: the same error of two runs (other ports,
// namespaces, resource versions, a retry's note or not) has one stable
// text; a changed message does not.
func TestStableErrorTextOfTwoRuns(t *testing.T) {
	a := report.StableErrorText(`too old resource version: 1234 (5678) - error from a previous attempt: EOF`, "informer-conformance-aaaaa")
	b := report.StableErrorText(`too old resource version: 99 (104)`, "informer-conformance-bbbbb")
	if a != b {
		t.Errorf("one error, two stable texts: %q, %q", a, b)
	}
	if c := report.StableErrorText(`The resourceVersion for the provided watch is too old.`, ""); c == a {
		t.Errorf("a changed message has the old one's stable text %q", c)
	}
}
