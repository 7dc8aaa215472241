package faultproxy

import (
	"reflect"
	"runtime"
)

// Goroutines names the functions the proxy's own goroutines run (accepting,
// piping, holding a blackholed connection), fully qualified as
// runtime.FuncForPC names them: a goroutine-leak check of the client under
// test ignores them (probe.NewLeakCheck), since they are the network, not
// the client. Taken from the methods themselves, so a rename cannot leave
// a stale name behind.
func Goroutines() []string {
	return []string{
		funcName((*Proxy).acceptLoop),
		funcName((*Proxy).pipe),
		funcName((*Proxy).holdUntilUnblackholed),
	}
}

func funcName(f any) string {
	return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
}
