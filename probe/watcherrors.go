package probe

import (
	"context"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// When a ReportedRV was read.
const (
	// RVSynced: right after the informer first reported HasSynced.
	RVSynced = "synced"
	// RVStopping: when the probe began to stop it.
	RVStopping = "stopping"
)

// recordWatchErrors is a watch error handler that records each error, then
// hands it to client-go's own (cache.DefaultWatchErrorHandler: it logs), so
// the informer logs as it would without the probe. The default's
// signature changed in client-go v0.33 (a context first): it is called
// through reflection, whichever the version under test has.
func recordWatchErrors(rec *Recorder) cache.WatchErrorHandler {
	return func(r *cache.Reflector, err error) {
		rec.addWatchError(WatchError{Time: time.Now(), Err: err.Error(), Reason: string(apierrors.ReasonForError(err))})
		callDefaultWatchErrorHandler(r, err)
	}
}

func callDefaultWatchErrorHandler(r *cache.Reflector, err error) {
	f := reflect.ValueOf(cache.DefaultWatchErrorHandler)
	args := []reflect.Value{reflect.ValueOf(r), reflect.ValueOf(&err).Elem()}
	if f.Type().NumIn() == 3 {
		args = append([]reflect.Value{reflect.ValueOf(context.Background())}, args...)
	}
	f.Call(args)
}
