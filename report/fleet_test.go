package report

import (
	"reflect"
	"testing"
	"time"
)

func TestFleet(t *testing.T) {
	member := func(accept string, deletes int, synced time.Duration, texts ...string) []Observation {
		obs := []Observation{
			Value("GET list pods: first request's Accept", accept),
			Calls("handler calls: Delete", deletes).Varying(),
			Seconds("start to synced", synced),
		}
		if len(texts) > 0 {
			obs = append(obs, ErrorTexts("watch error handler: Forbidden", texts))
		}
		for i := range obs {
			obs[i] = obs[i].Of("ignored")
		}
		return obs
	}
	a := member("protobuf, JSON", 3, 2*time.Second, "pods is forbidden")
	b := member("protobuf, JSON", 3, 5*time.Second)
	c := member("JSON, */*", 2, time.Second, "pods is forbidden", "the server could not find the requested resource")
	got := Fleet("storm (3 informers)", a, b, c)
	num := func(f float64) *float64 { return &f }
	want := []Observation{
		{Informer: "storm (3 informers)", What: "GET list pods: first request's Accept", Value: "JSON, */* | protobuf, JSON", Class: Exact},
		{Informer: "storm (3 informers)", What: "handler calls: Delete", Number: num(8), Unit: UnitCalls, Class: Count, Varies: true},
		{Informer: "storm (3 informers)", What: "start to synced", Number: num(5), Unit: UnitSeconds, Class: Duration},
		{Informer: "storm (3 informers)", What: "watch error handler: Forbidden", Value: "pods is forbidden | the server could not find the requested resource", Class: ErrorText},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Fleet:\n got %+v\nwant %+v", got, want)
	}
	if *a[1].Number != 3 || a[0].Informer != "ignored" {
		t.Errorf("Fleet changed a member's observations: %+v", a)
	}
	// Fifty alike are one set, as one informer's with the fleet's name.
	var alike [][]Observation
	for range 50 {
		alike = append(alike, member("protobuf, JSON", 0, time.Second))
	}
	if got := Fleet("storm (50 informers)", alike...); len(got) != 3 || got[0].Value != "protobuf, JSON" || *got[2].Number != 1 {
		t.Errorf("Fleet of 50 alike: %+v", got)
	}
}
