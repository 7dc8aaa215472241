// Package probe observes a client-go informer from the outside, the way the
// conformance specs need: every handler call, every HTTP request of its
// client (with what each watch stream carried and how it ended) and every
// TCP dial, all timestamped in one append-only, lock-protected recorder.
// From that record it classifies each re-initialisation (a LIST, or a WATCH
// with sendInitialEvents=true, after the first sync) and its cause.
//
// It is plain Go (no Ginkgo) so its parts can be unit-tested on recorded
// sequences; e2e wires it into specs and reports.
package probe
