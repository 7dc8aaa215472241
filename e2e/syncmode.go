package e2e

import (
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/client-go/features"

	"github.com/informer-conformance/informer-conformance/probe"
)

// SyncMode is one of client-go's two ways for a reflector to list: a
// streaming list (a WATCH with sendInitialEvents=true, the default from
// client-go 1.35) or a LIST followed by a WATCH. The feature gate is
// features.WatchListClient (env KUBE_FEATURE_WatchListClient).
type SyncMode struct {
	Name      string
	Streaming bool
	// Stack is the informer stack the spec's probes are built with
	// (Env.StartProbe, unless the spec picks one): "" is probe.StackTyped.
	Stack probe.Stack
}

var (
	// StreamingList is the WatchListClient feature on.
	StreamingList = SyncMode{Name: "streaming list", Streaming: true}
	// ListWatch is the WatchListClient feature off.
	ListWatch = SyncMode{Name: "LIST+WATCH", Streaming: false}
)

// Labels of the two modes, so `--label-filter=sync:list` runs one of them.
const (
	LabelStreamingList = "sync:streaming-list"
	LabelListWatch     = "sync:list"
)

// use switches client-go to the mode for the rest of the spec of fe
// (restored after it), and returns the stack (typed when the mode names
// none). StartEnv calls it, before building anything. The mode comes as a
// value, from the adapter that made the spec (its labels are the value's:
// Entry, Decorations), and goes on to the Env and its probes; nothing reads
// it back from the test framework. The zero SyncMode leaves client-go in
// its default mode.
func (m SyncMode) use(fe FrontEnd) probe.Stack {
	ginkgo.GinkgoHelper()
	if m.Name == "" {
		// The zero mode: client-go's default, left as it is (a negative
		// control whose broken consumer does not depend on the mode).
		return probe.StackTyped
	}
	setGate(fe, features.WatchListClient, m.Streaming)
	stack := m.Stack.OrTyped()
	if stack.CBOR() {
		useCBORClient(fe)
	}
	return stack
}

// The client-go gates of the CBOR stacks (features/known_features.go,
// alpha in v0.32): by name, since client-go v0.31 has neither (the suite
// compiles with it; its CBOR entries skip by their ClientGo constraint).
const (
	gateClientsAllowCBOR  features.Feature = "ClientsAllowCBOR"
	gateClientsPreferCBOR features.Feature = "ClientsPreferCBOR"
)

// useCBORClient turns client-go's CBOR gates on for the rest of the spec
// (the dynamic client reads them when it is built and at each request), or
// skips the spec when this client-go has none.
func useCBORClient(fe FrontEnd) {
	for _, g := range []features.Feature{gateClientsAllowCBOR, gateClientsPreferCBOR} {
		if _, known := ClientGoGate(string(g)); !known {
			fe.Skip(fmt.Sprintf("%s has no %s gate (CBOR clients need v0.32+)", ClientGoName(), g))
		}
	}
	for _, g := range []features.Feature{gateClientsAllowCBOR, gateClientsPreferCBOR} {
		useClientGoGate(fe, string(g), true)
	}
}

// OnStack is the mode on another informer stack (its name says which).
func (m SyncMode) OnStack(s probe.Stack) SyncMode {
	m.Stack = s
	if s != "" && s != probe.StackTyped {
		m.Name += ", " + string(s)
	}
	return m
}

// Decorations are the mode's labels (Labels) and the version constraints
// of its stack: the CBOR stacks need client-go v0.32+ and kube-apiserver
// 1.32+ (CBORServingAndStorage); RequireVersions skips them elsewhere,
// saying so.
func (m SyncMode) Decorations() []any {
	d := []any{m.Labels()}
	if m.Stack.CBOR() {
		d = append(d, ClientGo(">= 0.32.0"), KubeAPIServer(">= 1.32.0"))
	}
	return d
}

// Labels are the mode's labels: its sync mode, its stack, and
// LabelExtraStack off the typed stack.
func (m SyncMode) Labels() ginkgo.Labels {
	stack := m.Stack.OrTyped()
	labels := ginkgo.Label(map[bool]string{true: LabelStreamingList, false: LabelListWatch}[m.Streaming], LabelStackPrefix+string(stack))
	if stack != probe.StackTyped {
		labels = append(labels, LabelExtraStack)
	}
	return labels
}

// LabelStackPrefix starts a spec's stack label (stack:typed, ...). Specs on
// a stack other than the typed one also carry LabelExtraStack, which the
// default make e2e leaves out (make e2e-stacks runs them).
const (
	LabelStackPrefix = "stack:"
	LabelExtraStack  = "extra-stack"
)

// The scenarios declare their sync modes and stacks in their values
// (scenarios.Entry.Modes, scenarios.Spec.Mode), from which the suite's
// specs are made with these helpers. A spec written by hand (the
// consistency detector's, a downstream's own) declares them the same way:
//
//   - a table over both modes: DescribeSyncModes(text, body), or, in a
//     table with more entries or parameters, BothSyncModes(params...) and
//     m.Entry(text, params...); over every stack too:
//     DescribeStacksAndSyncModes, StacksAndSyncModes;
//   - a spec in one mode: its decorations include m.Decorations();
//
// and the body hands m to its scenario, whose StartEnv switches client-go to
// it (m.Setup(), or m.WithClient in a negative control). The labels come
// from the value, so `--label-filter=sync:list` runs exactly the specs in
// that mode (suites/conformance's TestSpecsCarryTheirModesLabels checks
// the suite's). Each helper is a GinkgoHelper: the entries' code
// locations are the spec's own lines.

// Entry is a DescribeTable entry running the table's body in mode m:
// described "text, <mode>" (the mode alone when text is ""), decorated
// with m.Decorations(), with parameters m followed by params (Ginkgo
// decorations among them apply to the entry).
func (m SyncMode) Entry(text string, params ...any) ginkgo.TableEntry {
	ginkgo.GinkgoHelper()
	name := m.Name
	if text != "" {
		name = text + ", " + m.Name
	}
	args := append(m.Decorations(), m)
	return ginkgo.Entry(name, append(args, params...)...)
}

// BothSyncModes are the entries of DescribeSyncModes (one per sync mode,
// typed stack), for a table with other entries; params (parameters after
// the mode, or decorations) apply to both.
func BothSyncModes(params ...any) []any {
	ginkgo.GinkgoHelper()
	return []any{StreamingList.Entry("", params...), ListWatch.Entry("", params...)}
}

// DescribeSyncModes declares a table of two specs running body once per
// sync mode (BothSyncModes); decorations (labels, ...) apply to both.
func DescribeSyncModes(text string, body func(ctx ginkgo.SpecContext, m SyncMode), decorations ...any) bool {
	ginkgo.GinkgoHelper()
	return ginkgo.DescribeTable(text, append(append([]any{body}, decorations...), BothSyncModes()...)...)
}

// StacksAndSyncModes are the entries running a body on every informer
// stack (probe.Stacks) in both sync modes, each labelled with its mode and
// stack (and LabelExtraStack off the typed stack); params apply to all. The
// typed entries keep the names BothSyncModes gives.
func StacksAndSyncModes(params ...any) []any {
	ginkgo.GinkgoHelper()
	var entries []any
	for _, stack := range probe.Stacks {
		for _, m := range []SyncMode{StreamingList, ListWatch} {
			entries = append(entries, m.OnStack(stack).Entry("", params...))
		}
	}
	return entries
}

// DescribeStacksAndSyncModes is DescribeSyncModes on every informer stack:
// a table of two specs per stack (StacksAndSyncModes).
func DescribeStacksAndSyncModes(text string, body func(ctx ginkgo.SpecContext, m SyncMode), decorations ...any) bool {
	ginkgo.GinkgoHelper()
	return ginkgo.DescribeTable(text, append(append([]any{body}, decorations...), StacksAndSyncModes()...)...)
}

// String is the mode's name.
func (m SyncMode) String() string { return m.Name }
