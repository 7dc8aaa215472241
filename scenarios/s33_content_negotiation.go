package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
)

// S33's assertions. Stacks: what each informer stack asks for and gets.
// Tables: what an informer answered in the Table format does.
const (
	StackAsked     = "each list and watch of the stack's informer asked for the encoding client-go's stack asks for"
	StackAnswered  = "each 2xx answer to the stack's informer came in the stack's encoding"
	TableNotSynced = "the informer answered in the Table format did not claim it synced: not synced, an empty store, no handler call"
	TableReported  = "the informer answered in the Table format reported it to its watch error handler, naming the Table"
	TableRows      = "a plain GET asking for a Table got one row for each object"
)

// TableAccept is the Accept header of a client asking for the Table
// format, as kubectl get does (k8s.io/kubectl get.go: the server prints
// the rows; JSON only, no protobuf).
const TableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// S33's numbers: the objects of each resource, and how soon after the
// server's whole answer in the Table format (the LIST's body, or a
// streaming list's bookmark read off the wire) the informer must have
// reported it. A reflector reports within milliseconds (its list returns
// the error at once, tools/cache/reflector.go ListAndWatch); the rest is
// slack for a loaded machine. An informer that stays silent is watched for
// as long: its silence is what the report then states.
const (
	S33Objects     = 3
	S33ReportBound = 2 * time.Second
)

// The media types of the stacks' requests and answers.
const (
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
	mediaJSON     = "application/json"
	mediaCBOR     = "application/cbor"
	// acceptProtobuf is what a typed clientset of built-in types asks for
	// from v0.32 (rest/request.go UseProtobufAsDefault).
	acceptProtobuf = "application/vnd.kubernetes.protobuf,application/json"
	// acceptMetadataList and acceptMetadata are the metadata client's
	// (metadata/metadata.go client.List, and client.Watch and watchList).
	acceptMetadataList = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	acceptMetadata     = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	// acceptCBOR is the dynamic client's with the ClientsAllowCBOR gate on
	// (dynamic/simple.go ConfigFor, v0.32+).
	acceptCBOR = "application/json;q=0.9,application/cbor;q=1"
)

// ProtobufByDefaultFrom is the first client-go whose typed clientsets of
// built-in types ask for protobuf when their rest.Config sets no content
// type: v0.32's generated clients pass gentype.PrefersProtobuf, and
// gentype's requests call rest/request.go UseProtobufAsDefaultIfPreferred;
// v0.31's ask for JSON (rest/client.go NewRESTClient defaults ContentType
// to application/json, rest/request.go NewRequest sends it with ", */*").
const ProtobufByDefaultFrom = "0.32.0"

// stackEncoding is what an informer stack's requests ask for (Accept) and
// what the server answers (the media type of the 2xx Content-Type), for
// lists (and the consistency detector's) and for watches (and streaming
// lists).
type stackEncoding struct {
	name                    string
	listAccept, watchAccept string
	list, watch             string
	// why cites client-go's source.
	why string
}

// stackEncodings are the encodings stack may speak on the client-go in use,
// with client-go's CBOR gates on (cbor) or off: one, or, where the version
// is unknown and it matters (the typed stack), each that some supported
// version speaks (what holds for every version).
func stackEncodings(stack probe.Stack, cbor bool) []stackEncoding {
	switch stack {
	case probe.StackTyped:
		proto := stackEncoding{name: "protobuf", listAccept: acceptProtobuf, watchAccept: acceptProtobuf, list: mediaProtobuf, watch: mediaProtobuf,
			why: "v0.32+: gentype.PrefersProtobuf, rest/request.go UseProtobufAsDefault, the CBOR gates or not"}
		js := stackEncoding{name: "JSON", listAccept: "application/json, */*", watchAccept: "application/json, */*", list: mediaJSON, watch: mediaJSON,
			why: "v0.31: no protobuf default, rest/client.go NewRESTClient defaults ContentType to JSON, rest/request.go NewRequest asks for it and */*"}
		switch atLeast, known := e2e.ClientGoAtLeast(ProtobufByDefaultFrom); {
		case !known:
			return []stackEncoding{proto, js}
		case atLeast:
			return []stackEncoding{proto}
		}
		return []stackEncoding{js}
	case probe.StackTypedJSON:
		return []stackEncoding{{name: "JSON", listAccept: mediaJSON, watchAccept: mediaJSON, list: mediaJSON, watch: mediaJSON,
			why: "the rest.Config's ContentType and AcceptContentTypes (rest/config.go), sent as they are (rest/request.go), the CBOR gates or not"}}
	case probe.StackMetadata:
		return []stackEncoding{{name: "protobuf as PartialObjectMetadata", listAccept: acceptMetadataList, watchAccept: acceptMetadata, list: mediaProtobuf, watch: mediaProtobuf,
			why: "metadata/metadata.go client.List and client.Watch set their own Accept (as=PartialObjectMetadataList, as=PartialObjectMetadata), the CBOR gates or not"}}
	case probe.StackDynamic, probe.StackDynamicCRD, probe.StackDynamicCRDCBOR:
		if cbor {
			return []stackEncoding{{name: "CBOR", listAccept: acceptCBOR, watchAccept: acceptCBOR, list: mediaCBOR, watch: "application/cbor-seq",
				why: "dynamic/simple.go ConfigFor with ClientsAllowCBOR (v0.32+); the server answers a watch in application/cbor-seq"}}
		}
		return []stackEncoding{{name: "JSON", listAccept: mediaJSON, watchAccept: mediaJSON, list: mediaJSON, watch: mediaJSON,
			why: "dynamic/simple.go ConfigFor: AcceptContentTypes application/json whatever the config says, the CBOR gates off"}}
	}
	return nil
}

// wrongRequests are the requests of rec (the informer's and the
// consistency detector's) that did not ask for enc, and the 2xx answers
// that did not come in it.
func wrongRequests(rec probe.Record, enc stackEncoding) (asked, answered []string) {
	for _, r := range append(slices.Clone(rec.Requests), rec.ConsistencyChecks...) {
		accept, media := enc.watchAccept, enc.watch
		switch r.Kind() {
		case "list", probe.KindConsistencyCheck:
			accept, media = enc.listAccept, enc.list
		case "watch", "streaming list":
		default:
			asked = append(asked, fmt.Sprintf("#%d %s %s: not a list or a watch", r.ID, r.Method, r.Path))
			continue
		}
		if probe.MediaNames(r.Accept) != probe.MediaNames(accept) {
			asked = append(asked, fmt.Sprintf("#%d %s: Accept %q, want %q", r.ID, r.Kind(), r.Accept, accept))
		}
		if r.Status >= 200 && r.Status < 300 {
			if mt, _, _ := mime.ParseMediaType(r.ContentType); mt != media {
				answered = append(answered, fmt.Sprintf("#%d %s: answered %q, want %s", r.ID, r.Kind(), r.ContentType, media))
			}
		}
	}
	return asked, answered
}

// S33ContentNegotiation is S33's value: both sync modes, on every stack for the encodings, and its negative controls.
var S33ContentNegotiation = Register(Scenario{
	ID: "S33", Title: "content negotiation", Labels: []string{"content-negotiation"},
	Specs: []Spec{
		// The typed entries: client-go's CBOR gates off, on the default
		// cluster, every stack but the CBOR one. The CBOR entries (extra-stack,
		// make e2e-stacks): the gates on and kube-apiserver serving CBOR (flag
		// profile cbor), every stack; what each dynamic client asks for changes.
		{
			Text: "each informer stack asks for its encoding and gets it",
			Entries: []Entry{
				{Feature: "each informer stack asks for its encoding and gets it", Run: s33StackEncodings},
				{
					Name:  "client-go's CBOR gates on",
					Modes: []e2e.SyncMode{e2e.StreamingList.OnStack(probe.StackDynamicCRDCBOR), e2e.ListWatch.OnStack(probe.StackDynamicCRDCBOR)},
					Run:   s33StackEncodings,
				},
			},
		},
		// A streaming list answered in the Table format needs kube-apiserver
		// 1.34+ (kubernetes PR #132817: watch-list in the Table format).
		{
			Text: "a list answered as a Table is reported, not taken for a list",
			Entries: []Entry{
				s33Table(TableTypedClient, e2e.StreamingList, Entry{Sample: true, KubeAPIServer: s33StreamingTable}),
				s33Table(TableTypedClient, e2e.ListWatch, Entry{Sample: true}),
				s33Table(TableListWatch, e2e.StreamingList, Entry{KubeAPIServer: s33StreamingTable}),
				s33Table(TableListWatch, e2e.ListWatch, Entry{}),
				s33Table(TableDynamic, e2e.StreamingList, Entry{KubeAPIServer: s33StreamingTable}),
				// v0.31-v0.35 sync an empty store (TableReportFrom).
				s33Table(TableDynamic, e2e.ListWatch, Entry{Labels: []string{"release-sensitive"}}),
			},
		},
		{
			Text: "fails when the client's config asks for JSON on the typed stack", Mode: e2e.ListWatch,
			Client: JSONContentConfig,
			Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				if src := e2e.InformerSource(); src != "" {
					e2e.Skip(ctx, fmt.Sprintf("the typed stack's informer is built by informer source %s, whose encoding S33 records and does not judge: the control would test nothing", src))
				}
				StackEncodings(ctx, s)
			},
			Fails: []string{StackAsked}, Because: "the S33 check of what each stack asks for catches a config that overrides it",
		},
		{
			Text: "fails when the client's transport asks for JSON only", Mode: e2e.ListWatch,
			Client: AcceptJSONOnly,
			Run:    RunBody(StackEncodings),
			Fails:  []string{StackAnswered}, Because: "the S33 check of each stack's answers catches a transport that rewrites Accept",
		},
		{
			Text: "fails when the client takes a Table for an empty list", Mode: e2e.ListWatch,
			Client: TableAsEmptyList,
			Run:    RunWith2(TableAnswers, TableTypedClient, nil),
			Fails:  []string{TableNotSynced}, Because: "the S33 check catches an informer that syncs an empty store from a Table",
		},
		{
			Text: "fails when the watch error handler loses the error", Mode: e2e.ListWatch,
			Run:   RunWith2(TableAnswers, TableTypedClient, DropWatchErrors),
			Fails: []string{TableReported}, Because: "the S33 check catches a Table answer nobody is told of",
		},
		{
			Text: "fails when the client drops the Table's rows", Mode: e2e.ListWatch,
			Client: DropTableRows,
			Run:    RunWith2(TableAnswers, TableTypedClient, nil),
			Fails:  []string{TableRows}, Because: "the S33 check of the server's Table catches rows that went missing",
		},
	},
})

// s33StreamingTable is the kube-apiserver a streaming list answered in the
// Table format needs.
const s33StreamingTable = ">= 1.34.0"

// s33StackEncodings is the body of S33's encodings table.
func s33StackEncodings(ctx context.Context, s e2e.Setup, _ Input) { StackEncodings(ctx, s) }

// s33Table is the entry of S33's Table table for client c in mode m, with
// e's labels, sample and constraints; its feature name is the first
// release's ("a list answered as a Table, " and the client).
func s33Table(c TableClient, m e2e.SyncMode, e Entry) Entry {
	e.Name, e.Modes, e.Feature = string(c), []e2e.SyncMode{m}, "a list answered as a Table, "+string(c)
	e.Run = func(ctx context.Context, s e2e.Setup, _ Input) { TableAnswers(ctx, s, c, nil) }
	return e
}

// StackEncodings is S33's first part: S33Objects pods and widgets, and an
// informer of every stack (probe.Stacks) on the test user's client, one
// after the other: each syncs and converges to a quorum read of its
// resource, then every list and watch it sent (and the consistency
// detector's list) must have asked for the encoding its client-go stack
// asks for (StackAsked) and every 2xx answer must have come in it
// (StackAnswered). In a mode on the CBOR stack (s.Mode.Stack
// dynamic-crd-cbor) client-go's CBOR gates are on for the whole spec and
// kube-apiserver serves CBOR (StartEnv: flag profile cbor,
// CBORServingAndStorage): every stack runs, the CBOR one included, and
// each dynamic client asks for CBOR. Otherwise the gates are off, as
// client-go's defaults have them, the cluster is the default one, and the
// CBOR stack, which would be the dynamic-crd stack there, is left out.
//
// Expected of client-go, per stack (the Accept of lists / of watches and
// streaming lists -> the answers):
//   - typed: v0.32-v0.38 "application/vnd.kubernetes.protobuf,application/json"
//     (gentype's PrefersProtobuf: rest/request.go
//     UseProtobufAsDefaultIfPreferred, UseProtobufAsDefault; the CBOR gates
//     change nothing, UseProtobufAsDefault overrides the CBOR default of
//     rest/client.go GetClientContentConfig) -> protobuf; v0.31
//     "application/json, */*" (rest/client.go NewRESTClient: ContentType
//     defaulted to JSON; rest/request.go NewRequest) -> JSON. A difference
//     the spec expects by version (ProtobufByDefaultFrom), observed, not a
//     defect.
//   - typed-json: "application/json" as the rest.Config sets it -> JSON.
//   - metadata: lists "...protobuf;as=PartialObjectMetadataList...,application/json",
//     watches "...;as=PartialObjectMetadata..." (metadata/metadata.go
//     client.List, client.Watch; the same on v0.31-v0.38) -> protobuf.
//   - dynamic, dynamic-crd: the gates off, "application/json"
//     (dynamic/simple.go ConfigFor sets AcceptContentTypes itself) -> JSON.
//   - dynamic, dynamic-crd, dynamic-crd-cbor with ClientsAllowCBOR and
//     ClientsPreferCBOR (alpha from v0.32, off by default through
//     v0.38.0-alpha.2, features/known_features.go):
//     "application/json;q=0.9,application/cbor;q=1" (dynamic/simple.go
//     ConfigFor; rest/client.go scrubCBORContentConfigIfDisabled would turn
//     it into JSON with the gate off) -> application/cbor, watches
//     application/cbor-seq (decoded by rest/client.go
//     clientNegotiatorWithCBORSequenceStreamDecoder); pods too, which
//     kube-apiserver 1.36 serves in CBOR with its gate.
func StackEncodings(ctx context.Context, s e2e.Setup) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	cbor := env.Stack().CBOR()
	subjects := map[schema.GroupVersionResource]*e2e.Subjects{
		probe.PodsResource:    env.SubjectsOf(probe.PodsResource),
		probe.WidgetsResource: env.SubjectsOf(probe.WidgetsResource),
	}
	for _, sub := range subjects {
		createNamed(ctx, sub, "s33-%d", S33Objects)
	}
	var spoke []string
	for _, stack := range probe.Stacks {
		if stack.CBOR() && !cbor {
			continue
		}
		e2e.By(ctx, "an informer of stack "+string(stack))
		obs := env.StartProbe(ctx, string(stack), env.User, probe.Options{Namespace: env.Namespace, Stack: stack})
		obs.EventuallyConverged(ctx, subjects[stack.Resource()].Quorum())
		rec := obs.Recorder.Snapshot()
		if obs.Stack != stack {
			// A downstream's informer source (e2e.Hooks.Informers) built it:
			// its encoding is its own, recorded, not judged.
			spoke = append(spoke, fmt.Sprintf("%s: built by informer source %s, not judged", stack, obs.Stack))
			continue
		}
		encs := stackEncodings(stack, cbor)
		var asked, answered []string
		for i, enc := range encs {
			a, b := wrongRequests(rec, enc)
			if i == 0 || len(a)+len(b) == 0 {
				asked, answered = a, b
			}
			if len(a)+len(b) == 0 {
				spoke = append(spoke, fmt.Sprintf("%s: %s (%d requests)", stack, enc.name, len(rec.Requests)+len(rec.ConsistencyChecks)))
				break
			}
		}
		Expect(asked).To(BeEmpty(), "informer %s: "+StackAsked+" (%s; record: %s)", stack, encs[0].why, obs.Dir)
		Expect(answered).To(BeEmpty(), "informer %s: "+StackAnswered+" (%s; record: %s)", stack, encs[0].why, obs.Dir)
	}
	gates := "off"
	if cbor {
		gates = "on"
	}
	env.Note("S33 stack encodings", fmt.Sprintf("client-go's CBOR gates %s:\n%s", gates, strings.Join(spoke, "\n")))
}

// TableClient is the client of S33's informer that asks for the Table
// format.
type TableClient string

const (
	// TableTypedClient: the typed clientset and informer factory on a
	// rest.Config whose AcceptContentTypes asks for Table (a config copied
	// from a table printer's).
	TableTypedClient TableClient = "a typed clientset whose config asks for Table"
	// TableListWatch: client-go's cache.NewListWatchFromClient on a REST
	// client that asks for Table and whose scheme knows metav1.Table
	// (metav1.AddMetaToScheme): the reflector itself gets the Table.
	TableListWatch TableClient = "a ListWatch on a REST client that decodes Tables"
	// TableDynamic: the dynamic informer factory's client with a transport
	// that asks for Table (the dynamic client sets its own Accept,
	// dynamic/simple.go ConfigFor, so only its transport can).
	TableDynamic TableClient = "a dynamic informer whose transport asks for Table"
)

// TableClients are S33's Table clients.
var TableClients = []TableClient{TableTypedClient, TableListWatch, TableDynamic}

// TableReportFrom is the first client-go whose reflector rejects a list in
// the Table format that the dynamic client decoded (an UnstructuredList of
// kind Table): kubernetes PR #136937, fixing kubernetes issue #132926.
const TableReportFrom = "0.36.0"

// tableExpectation is what client-go's source says an informer on a
// TableClient does with the Table answer, in one sync mode: whether it
// reports it to its watch error handler, whether it stays unsynced (the
// spec asserts each that holds), and, where it stays silent, the upstream
// limitation its report states.
type tableExpectation struct {
	reported, notSynced bool
	why, limitation     string
}

// tableExpectationOf is what client-go v0.31-v0.38 does (from their source:
// tools/cache/reflector.go list, watchList, handleAnyWatch; the client's
// decoder):
//   - TableTypedClient, both modes: reported, not synced. The typed
//     clientset's scheme has no meta.k8s.io/v1 Table (kubernetes/scheme
//     register.go), so decoding the LIST's answer fails ("no kind "Table" is
//     registered", rest/request.go Result.Into) and reflector.go list
//     returns the error to the watch error handler (Run); a streaming list's
//     events fail to decode the same way (the stream watcher's ERROR event)
//     and the reflector falls back to that LIST (ListAndWatch,
//     fallbackToList).
//   - TableListWatch, LIST+WATCH: reported, not synced: reflector.go list
//     gets the *metav1.Table; meta.ListAccessor takes it (it has ListMeta),
//     meta.ExtractListWithAlloc does not ("unable to understand list result
//     ... no Items field").
//   - TableListWatch, streaming list: not synced, silent (an upstream
//     limitation): handleAnyWatch drops every event whose object is not the
//     informer's type (*v1.Table, not *v1.Pod), the end bookmark too, with
//     utilruntime.HandleError only, so the streaming list never ends; the
//     reflector waits on it until its timeoutSeconds (5-10 min), then opens
//     another (as S14 shows).
//   - TableDynamic, LIST+WATCH: from v0.36 (TableReportFrom) reported, not
//     synced: reflector.go list rejects an UnstructuredList of kind Table
//     ("unsupported list gvk", isUnsupportedTableListObject). v0.31-v0.35:
//     dynamic/simple.go List decodes the Table into an UnstructuredList
//     without items, no error, and the informer syncs an empty store,
//     nothing reported (release-sensitive: the spec fails there).
//   - TableDynamic, streaming list: not synced, silent (an upstream
//     limitation): the events are Unstructured Tables, dropped from v0.34
//     (kubernetes PR #132928: handleAnyWatch, "Unsupported watch event
//     object gvk"), kept in the streaming list's temporary store before; the
//     end bookmark's annotation is inside the Table's row, never found.
func tableExpectationOf(c TableClient, streaming bool) tableExpectation {
	switch {
	case c == TableTypedClient:
		return tableExpectation{reported: true, notSynced: true,
			why: "the typed clientset's scheme has no meta.k8s.io/v1 Table: decoding the list fails (rest/request.go Result.Into), reflector.go list returns the error; a streaming list's events fail to decode and the reflector falls back to that LIST"}
	case c == TableListWatch && !streaming:
		return tableExpectation{reported: true, notSynced: true,
			why: "reflector.go list: meta.ListAccessor takes the *metav1.Table, meta.ExtractListWithAlloc does not (no Items field)"}
	case c == TableListWatch:
		return tableExpectation{notSynced: true,
			limitation: "the reflector drops every event of the streaming list as an unexpected type (*v1.Table: reflector.go handleAnyWatch, utilruntime.HandleError only), the end bookmark too, and waits on the stream until its timeoutSeconds (5-10 min), then opens another: never synced, nothing reported (kubernetes issue #132926)"}
	case c == TableDynamic && !streaming:
		return tableExpectation{reported: true, notSynced: true,
			why: "from client-go v0.36 reflector.go list rejects an UnstructuredList of kind Table (kubernetes PR #136937); v0.31-v0.35 sync an empty store: dynamic/simple.go List decodes the Table into a list without items, no error"}
	}
	return tableExpectation{notSynced: true,
		limitation: "the streaming list's events are Unstructured Tables, dropped by the reflector from v0.34 (reflector.go handleAnyWatch, \"Unsupported watch event object gvk\", kubernetes PR #132928), kept in its temporary store before; the end bookmark's annotation is inside the Table's row, never found: never synced, nothing reported (kubernetes issue #132926)"}
}

// WatchErrorsWrapper wraps the watch error handler S33 records with (nil:
// none): a negative control's handler that loses what it is told.
type WatchErrorsWrapper func(cache.WatchErrorHandler) cache.WatchErrorHandler

// TableAnswers is S33's second part: S33Objects pods, an informer on
// client c whose lists and watches ask for the Table format (TableAccept),
// which kube-apiserver honours (a Table of rows, Content-Type
// application/json without a word of Table); then a plain GET asking for
// a Table. The spec waits until the server's whole answer reached the
// client (the LIST's body, or a streaming list's end bookmark, counted on
// the wire), then until the informer reports or syncs, at most
// S33ReportBound more. Asserted, where client-go's source says it holds
// (tableExpectationOf): the informer did not claim it synced: HasSynced
// false, its store empty, no handler call (TableNotSynced); its watch
// error handler got an error naming the Table within S33ReportBound of
// the answer (TableReported). Then the server side: the plain GET got a
// Table with one row per pod, naming them (TableRows). Observed: the
// informer's outcome (reported, synced with an empty store, or silent),
// the error's text, the Table's Content-Type and columns; a silent
// informer is reported as an upstream limitation. watchErrors, when set,
// wraps the watch error handler (a negative control); s.Client, when set,
// is the broken client of the informer and of the plain GET.
func TableAnswers(ctx context.Context, s e2e.Setup, c TableClient, watchErrors WatchErrorsWrapper) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	ns := env.Namespace
	pods := env.SubjectsOf(probe.PodsResource)
	var names []string
	for i := range S33Objects {
		name := fmt.Sprintf("s33-%d", i)
		_, err := pods.Create(ctx, name)
		Expect(err).NotTo(HaveOccurred())
		names = append(names, name)
	}
	errs := &watchErrorLog{}
	obs := startTableInformer(env, c, errs, watchErrors)
	exp := tableExpectationOf(c, env.Mode().Streaming)

	e2e.By(ctx, "the server's answer in the Table format, then the informer's report or sync")
	answered := awaitTableAnswer(ctx, obs, errs)
	o := tableOutcomeOf(obs, errs)
	o.record(env, c, obs.Name, exp, answered, errs)
	if exp.notSynced {
		Expect(o.synced || o.stored > 0 || len(o.rec.Events) > 0).To(BeFalse(),
			"informer %s (%s): "+TableNotSynced+": synced %t, %d objects stored, %d handler calls (record: %s)", obs.Name, c, o.synced, o.stored, len(o.rec.Events), obs.Dir)
	}
	if exp.reported {
		var within []string
		for _, e := range o.reports {
			if e.at.Sub(answered) <= S33ReportBound && strings.Contains(e.err, "Table") {
				within = append(within, e.err)
			}
		}
		Expect(within).NotTo(BeEmpty(), "informer %s (%s): "+TableReported+" within %s of the answer (%s); its watch error handler got: %s (record: %s)",
			obs.Name, c, S33ReportBound, exp.why, orNone(errs.texts(ns)), obs.Dir)
	}

	e2e.By(ctx, "a plain GET asking for a Table")
	rows, ct, columns := getTable(ctx, s, env.User, ns)
	env.Observe(report.Value("a GET asking for a Table: Content-Type", probe.MediaNames(ct)))
	env.Observe(report.Value("a GET asking for a Table: columns", strings.Join(columns, ", ")))
	Expect(rows).To(ConsistOf(names), TableRows+" (Content-Type %q, columns %v)", ct, columns)
}

// startTableInformer starts S33's informer "pods-as-table" on client c,
// unsynced, its watch errors logged into errs (through watchErrors, when
// set).
func startTableInformer(env *e2e.Env, c TableClient, errs *watchErrorLog, watchErrors WatchErrorsWrapper) *e2e.Observed {
	ns := env.Namespace
	handler := errs.handler
	if watchErrors != nil {
		handler = watchErrors(handler)
	}
	prepare := func(inf cache.SharedIndexInformer) error { return inf.SetWatchErrorHandler(handler) }
	const name = "pods-as-table"
	switch c {
	case TableTypedClient:
		cfg := rest.CopyConfig(env.User)
		cfg.AcceptContentTypes = TableAccept
		return env.StartProbeUnsynced(name, cfg, probe.Options{Namespace: ns, Stack: probe.StackTyped, Prepare: prepare})
	case TableListWatch:
		// Named: a downstream's informer source (e2e.Hooks.Informers)
		// replaces the typed stack's informers, not this one.
		return env.StartProbeUnsynced(name, env.User, probe.Options{Namespace: ns, Stack: "listwatch-table", Source: tableListWatch(handler)})
	case TableDynamic:
		return env.StartProbeUnsynced(name, AcceptTable(rest.CopyConfig(env.User)), probe.Options{Namespace: ns, Stack: probe.StackDynamic, Prepare: prepare})
	}
	env.Fail(fmt.Sprintf("S33: no such client %q", c))
	return nil
}

// awaitTableAnswer waits until the server answered the informer's list (or
// it reported or synced first), then until it reported or synced, at most
// S33ReportBound after the answer; it returns when the answer arrived.
func awaitTableAnswer(ctx context.Context, obs *e2e.Observed, errs *watchErrorLog) (answered time.Time) {
	decided := func() bool { return len(errs.all()) > 0 || obs.Informer.HasSynced() }
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, e2e.SyncTimeout, true, func(context.Context) (bool, error) {
		if at, ok := tableAnswerArrived(obs.Recorder.Snapshot()); ok {
			answered = at
			return true, nil
		}
		return decided(), nil
	})
	Expect(err).NotTo(HaveOccurred(), "informer %s: the server answered its list within %s, or it reported or synced (record: %s)", obs.Name, e2e.SyncTimeout, obs.Dir)
	if answered.IsZero() {
		answered = time.Now() // it decided before the answer was complete on the wire
	}
	// Bounded: ends at the report or the sync; a silent informer is
	// watched for S33ReportBound.
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Until(answered.Add(S33ReportBound)), true, func(context.Context) (bool, error) {
		return decided(), nil
	})
	return answered
}

// tableOutcome is what S33's informer did with the Table answer: synced,
// with how many objects stored, its record, what its watch error handler
// got, in words.
type tableOutcome struct {
	synced  bool
	stored  int
	rec     probe.Record
	reports []watchError
	text    string
}

func tableOutcomeOf(obs *e2e.Observed, errs *watchErrorLog) tableOutcome {
	o := tableOutcome{synced: obs.Informer.HasSynced(), stored: len(obs.Informer.GetStore().List()), rec: obs.Recorder.Snapshot(), reports: errs.all()}
	switch {
	case len(o.reports) > 0:
		o.text = "reported"
	case o.synced:
		o.text = fmt.Sprintf("synced with %d objects in its store (the server has %d), nothing reported", o.stored, S33Objects)
	default:
		o.text = fmt.Sprintf("silent: not synced, nothing reported within %s of the answer", S33ReportBound)
	}
	return o
}

// record observes the outcome and notes it, with the upstream limitation
// the expectation names when the informer did not report the answer.
func (o tableOutcome) record(env *e2e.Env, c TableClient, name string, exp tableExpectation, answered time.Time, errs *watchErrorLog) {
	env.Observe(report.Value("informer "+name+": outcome", o.text))
	env.Observe(report.Value("informer "+name+": watch error handler", orNone(errs.texts(env.Namespace))))
	if len(o.reports) > 0 {
		lat := max(o.reports[0].at.Sub(answered), 0)
		env.Observe(report.Seconds("informer "+name+": report after the answer", lat))
		env.RecordBound("informer "+name+" reported the Table answer", answered, o.reports[0].at, S33ReportBound, lat <= S33ReportBound)
	}
	note := ""
	if exp.limitation != "" && o.text != "reported" {
		note = "; UPSTREAM LIMITATION: " + exp.limitation
		env.UpstreamLimitation(exp.limitation)
	}
	env.Note("S33 Table answer", fmt.Sprintf("%s, %s: %s; %d requests, %d handler calls%s", c, env.Mode().Name, o.text, len(o.rec.Requests), len(o.rec.Events), note))
}

// tableAnswerArrived is when the server's whole answer to the informer's
// first list reached its client: the end of a 2xx LIST's body, or the
// last event read of a streaming list that carried a bookmark (its end).
func tableAnswerArrived(rec probe.Record) (time.Time, bool) {
	for _, r := range rec.ObjectRequests() {
		switch {
		case r.Kind() == "list" && r.Status >= 200 && r.Status < 300 && !r.End.IsZero():
			return r.End, true
		case r.Kind() == "streaming list" && r.EventTypes["BOOKMARK"] > 0:
			return r.LastEvent, true
		}
	}
	return time.Time{}, false
}

// getTable GETs the pods of namespace asking for a Table (through the
// set-up's broken client, if any) and returns the names of its rows'
// objects, the answer's Content-Type and the Table's column names.
func getTable(ctx context.Context, s e2e.Setup, user *rest.Config, namespace string) (rows []string, contentType string, columns []string) {
	cfg := rest.CopyConfig(user)
	if s.Client != nil {
		cfg = s.Client(cfg)
	}
	cfg.GroupVersion = &corev1.SchemeGroupVersion
	cfg.APIPath = "/api"
	cfg.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(cfg)
	Expect(err).NotTo(HaveOccurred())
	raw, err := rc.Get().Namespace(namespace).Resource("pods").SetHeader("Accept", TableAccept).Do(ctx).ContentType(&contentType).Raw()
	Expect(err).NotTo(HaveOccurred(), "GET pods asking for a Table")
	var table metav1.Table
	Expect(json.Unmarshal(raw, &table)).To(Succeed(), "the answer to a GET asking for a Table decodes as a Table")
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	rows = []string{}
	for _, r := range table.Rows {
		// The row's object: PartialObjectMetadata by default
		// (includeObject=Metadata).
		var m metav1.PartialObjectMetadata
		if err := json.Unmarshal(r.Object.Raw, &m); err != nil || m.Name == "" {
			rows = append(rows, fmt.Sprintf("(a row without an object's name: %s)", r.Cells))
			continue
		}
		rows = append(rows, m.Name)
	}
	return rows, contentType, columns
}

// watchError is one call of the watch error handler.
type watchError struct {
	at  time.Time
	err string
}

// watchErrorLog records the calls of an informer's watch error handler.
type watchErrorLog struct {
	mu   sync.Mutex
	errs []watchError
}

func (l *watchErrorLog) handler(_ *cache.Reflector, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, watchError{at: time.Now(), err: err.Error()})
}

func (l *watchErrorLog) all() []watchError {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.errs)
}

// texts are the distinct errors in comparable form: normalised
// (report.NormaliseError) and the object dumps some carry (a %#v of the
// Table) shortened to "{…}".
func (l *watchErrorLog) texts(namespace string) string {
	var out []string
	for _, e := range l.all() {
		t := collapseDumps(report.NormaliseError(e.err, namespace))
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " | ")
}

// collapseDumps replaces what each outermost pair of braces holds with an
// ellipsis.
func collapseDumps(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '{':
			if depth == 0 {
				b.WriteString("{…")
			}
			depth++
		case r == '}' && depth > 0:
			depth--
			if depth == 0 {
				b.WriteRune('}')
			}
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// tableScheme is a scheme that knows client-go's built-in types and
// meta.k8s.io/v1 Table (metav1.AddMetaToScheme): a table printer's.
var tableScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(metav1.AddMetaToScheme(s))
	return s
}()

// tableListWatch builds TableListWatch's informer: cache.NewListWatchFromClient
// on a core/v1 REST client of the probe's (instrumented) config asking for
// Table, decoding with tableScheme, and cache.NewSharedIndexInformer of
// pods on it, its watch error handler handler.
func tableListWatch(handler cache.WatchErrorHandler) probe.Builder {
	return func(in probe.SourceInput) (probe.Source, error) {
		cfg := rest.CopyConfig(in.Config)
		cfg.GroupVersion = &corev1.SchemeGroupVersion
		cfg.APIPath = "/api"
		cfg.NegotiatedSerializer = serializer.NewCodecFactory(tableScheme).WithoutConversion()
		cfg.AcceptContentTypes = TableAccept
		rc, err := rest.RESTClientFor(cfg)
		if err != nil {
			return nil, err
		}
		lw := cache.NewListWatchFromClient(rc, "pods", in.Namespace, fields.Everything())
		inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, in.Resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		if err := inf.SetWatchErrorHandler(handler); err != nil {
			return nil, err
		}
		return &informerSource{inf: inf, done: make(chan struct{})}, nil
	}
}

// informerSource is a probe.Source of one pod informer built by hand.
type informerSource struct {
	inf  cache.SharedIndexInformer
	once sync.Once
	done chan struct{}
}

func (s *informerSource) InformerFor(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	if gvr != probe.PodsResource {
		return nil, fmt.Errorf("this informer source has pods only, not %s", gvr)
	}
	return s.inf, nil
}

func (s *informerSource) Start(stop <-chan struct{}) {
	s.once.Do(func() {
		go func() {
			defer close(s.done)
			s.inf.Run(stop)
		}()
	})
}

func (s *informerSource) Shutdown() {
	s.once.Do(func() { close(s.done) }) // never started
	<-s.done
}

// AcceptTable wraps cfg's transport so that every request asks for the
// Table format (TableAccept), whatever client-go put in its Accept header:
// a request transformer as a table printer installs. The probe's recorder,
// outside it, sees client-go's own Accept.
func AcceptTable(cfg *rest.Config) *rest.Config {
	return httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		req = req.Clone(req.Context())
		req.Header.Set("Accept", TableAccept)
		return rt.RoundTrip(req)
	})
}

// Broken clients of S33's negative controls.

// JSONContentConfig is a client whose rest.Config asks for JSON
// (ContentType and AcceptContentTypes), as typed-json does on purpose,
// given to every stack: the typed stack then asks for JSON where client-go
// asks for protobuf (the dynamic and metadata clients set their own).
func JSONContentConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	return cfg
}

// DropTableRows wraps cfg's transport so that the rows of every Table the
// server answers with are dropped: a Table with no row.
func DropTableRows(cfg *rest.Config) *rest.Config {
	return rewriteTables(cfg, func(table map[string]any) map[string]any {
		table["rows"] = []any{}
		return table
	})
}

// TableAsEmptyList wraps cfg's transport so that every Table the server
// answers a LIST with becomes an empty PodList at the Table's
// resourceVersion: a client that takes a Table for a list with no items,
// as the dynamic client of v0.31-v0.35 does, without a word.
func TableAsEmptyList(cfg *rest.Config) *rest.Config {
	return rewriteTables(cfg, func(table map[string]any) map[string]any {
		return map[string]any{"kind": "PodList", "apiVersion": "v1", "metadata": table["metadata"], "items": []any{}}
	})
}

// rewriteTables wraps cfg's transport so that the JSON body of a 2xx answer
// to a request that is not a watch, when it is a Table, is replaced by
// rewrite's.
func rewriteTables(cfg *rest.Config, rewrite func(map[string]any) map[string]any) *rest.Config {
	return httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err != nil || httpfault.Watches(req) || resp.StatusCode < 200 || resp.StatusCode > 299 {
			return resp, err
		}
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != mediaJSON {
			return resp, nil
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if json.Unmarshal(body, &obj) == nil && obj["kind"] == "Table" {
			if b, err := json.Marshal(rewrite(obj)); err == nil {
				body = b
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Del("Content-Length")
		return resp, nil
	})
}

// DropWatchErrors is a watch error handler that loses every error, as a
// controller's handler that only counts them somewhere nobody looks: the
// informer's reports go nowhere.
func DropWatchErrors(cache.WatchErrorHandler) cache.WatchErrorHandler {
	return func(*cache.Reflector, error) {}
}
