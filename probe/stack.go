package probe

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Stack is the client and informer machinery an informer under test is
// built with: what a controller runs, each with its own decoder and store
// objects.
type Stack string

const (
	// StackTyped is the typed clientset and informers.SharedInformerFactory
	// in protobuf (the generated clients' default for built-in types from
	// client-go v0.32; v0.31's ask for JSON, S33 shows): the default.
	StackTyped Stack = "typed"
	// StackTypedJSON is the same over JSON (a rest.Config whose
	// ContentType and AcceptContentTypes are application/json).
	StackTypedJSON Stack = "typed-json"
	// StackDynamic is the dynamic client and
	// dynamicinformer.DynamicSharedInformerFactory: unstructured objects,
	// JSON (the dynamic client's only encoding).
	StackDynamic Stack = "dynamic"
	// StackMetadata is the metadata client and
	// metadatainformer.SharedInformerFactory: PartialObjectMetadata.
	StackMetadata Stack = "metadata"
	// StackDynamicCRD is the dynamic stack on the suite's custom resource
	// (WidgetsResource), what operators watch: kube-apiserver serves it
	// from the apiextensions handler, with a watch cache of its own, in
	// JSON (no protobuf for custom resources).
	StackDynamicCRD Stack = "dynamic-crd"
	// StackDynamicCRDCBOR is the dynamic stack on the custom resource in
	// CBOR: client-go's ClientsAllowCBOR and ClientsPreferCBOR gates (alpha,
	// v0.32+) make the dynamic client ask for application/cbor (JSON at
	// q=0.9) and write it (dynamic/simple.go ConfigFor), and decode watch
	// streams of application/cbor-seq (rest/client.go
	// clientNegotiatorWithCBORSequenceStreamDecoder). The gates must be on
	// when the probe is built (e2e's SyncMode.Use sets them), and the
	// server's CBORServingAndStorage gate too, else it answers JSON.
	StackDynamicCRDCBOR Stack = "dynamic-crd-cbor"
)

// OrTyped is s, or StackTyped for the empty stack: the one place that says
// an unset stack is the typed one.
func (s Stack) OrTyped() Stack {
	if s == "" {
		return StackTyped
	}
	return s
}

// Typed says whether s builds typed informers from client-go's typed
// factory (typed, typed-json, or unset).
func (s Stack) Typed() bool { return s.OrTyped() == StackTyped || s == StackTypedJSON }

// Stacks are the stacks a probe can build.
var Stacks = []Stack{StackTyped, StackTypedJSON, StackDynamic, StackMetadata, StackDynamicCRD, StackDynamicCRDCBOR}

// PodsResource is the resource a probe informs on by default.
var PodsResource = corev1.SchemeGroupVersion.WithResource("pods")

// WidgetsResource is the suite's custom resource, whose
// CustomResourceDefinition (fixtures/crds/widgets.yaml) every backend
// installs (cluster.InstallCRDs).
var WidgetsResource = schema.GroupVersionResource{Group: "conformance.informer-conformance.io", Version: "v1", Resource: "widgets"}

// CustomResource says whether the stack informs on the suite's custom
// resource rather than on pods.
func (s Stack) CustomResource() bool { return s == StackDynamicCRD || s == StackDynamicCRDCBOR }

// CBOR says whether the stack speaks CBOR (its client gates and the
// server's must be on).
func (s Stack) CBOR() bool { return s == StackDynamicCRDCBOR }

// Resource is what a probe on the stack informs on by default, and what a
// spec on it creates, changes and deletes: the custom resource on the CRD
// stacks, pods elsewhere.
func (s Stack) Resource() schema.GroupVersionResource {
	if s.CustomResource() {
		return WidgetsResource
	}
	return PodsResource
}

// typedConfig is the typed clientset's config on a stack: JSON on
// typed-json, protobuf (kubernetes.NewForConfig's default) elsewhere.
func typedConfig(stack Stack, cfg *rest.Config) *rest.Config {
	if stack != StackTypedJSON {
		return cfg
	}
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	return cfg
}

// factory is what the three informer factories share.
type factory interface {
	Start(stopCh <-chan struct{})
	Shutdown()
}

// stackFactory builds informers of one stack on an instrumented config.
type stackFactory struct {
	stack   Stack
	typed   informers.SharedInformerFactory
	dynamic dynamicinformer.DynamicSharedInformerFactory
	meta    metadatainformer.SharedInformerFactory
	// dynamicClient is the dynamic factory's client.
	dynamicClient dynamic.Interface
}

func newStackFactory(stack Stack, cfg *rest.Config, cs kubernetes.Interface, namespace string, resync time.Duration, fopts []informers.SharedInformerOption, tweak func(*metav1.ListOptions)) (*stackFactory, error) {
	stack = stack.OrTyped()
	if !stack.Typed() && len(fopts) > 0 {
		return nil, fmt.Errorf("stack %s: informer factory options (informers.SharedInformerOption) apply to the typed stacks only", stack)
	}
	f := &stackFactory{stack: stack}
	switch stack {
	case StackTyped, StackTypedJSON:
		// The probe's own clientset (typedConfig): its requests share the
		// informers' connection, as a controller's own calls would.
		if namespace != "" {
			fopts = append(fopts, informers.WithNamespace(namespace))
		}
		if tweak != nil {
			fopts = append(fopts, informers.WithTweakListOptions(tweak))
		}
		f.typed = informers.NewSharedInformerFactoryWithOptions(cs, resync, fopts...)
	case StackDynamic, StackDynamicCRD, StackDynamicCRDCBOR:
		dc, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		f.dynamicClient = dc
		f.dynamic = dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, resync, orAll(namespace), tweak)
	case StackMetadata:
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			return nil, err
		}
		f.meta = metadatainformer.NewFilteredSharedInformerFactory(mc, resync, orAll(namespace), tweak)
	default:
		return nil, fmt.Errorf("unknown informer stack %q (known: %v)", stack, Stacks)
	}
	return f, nil
}

func orAll(namespace string) string {
	if namespace == "" {
		return metav1.NamespaceAll
	}
	return namespace
}

func (f *stackFactory) factory() factory {
	switch {
	case f.typed != nil:
		return f.typed
	case f.dynamic != nil:
		return f.dynamic
	}
	return f.meta
}

// informerFor is the stack's shared informer for a resource.
func (f *stackFactory) informerFor(gvr schema.GroupVersionResource) (cache.SharedIndexInformer, error) {
	switch {
	case f.typed != nil:
		g, err := f.typed.ForResource(gvr)
		if err != nil {
			return nil, err
		}
		return g.Informer(), nil
	case f.dynamic != nil:
		return f.dynamic.ForResource(gvr).Informer(), nil
	}
	return f.meta.ForResource(gvr).Informer(), nil
}
