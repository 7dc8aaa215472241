package report

import (
	"encoding/json"
	"testing"
	"time"
)

// Each constructor declares its noise class; an observation of a report
// written before classes gets the class its unit implies, so compare reads
// old and new runs alike.
func TestObservationNoiseClass(t *testing.T) {
	for _, tc := range []struct {
		o    Observation
		want Class
		unit string
	}{
		{Value("list Accept", "protobuf"), Exact, ""},
		{Calls("handler calls: Add", 3), Count, UnitCalls},
		{Seconds("start to synced", 1500*time.Millisecond), Duration, UnitSeconds},
		{MiB("peak live heap", 37.5), Memory, UnitMiB},
	} {
		if got := tc.o.NoiseClass(); got != tc.want || tc.o.Unit != tc.unit {
			t.Errorf("%s: class %q unit %q, want %q %q", tc.o.What, got, tc.o.Unit, tc.want, tc.unit)
		}
		old := tc.o
		old.Class = ""
		raw, err := json.Marshal(old)
		if err != nil {
			t.Fatal(err)
		}
		var back Observation
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if got := back.NoiseClass(); got != tc.want {
			t.Errorf("%s from a report without classes (%s): class %q, want %q", tc.o.What, raw, got, tc.want)
		}
	}
	if n := *Seconds("x", 1500*time.Millisecond).Number; n != 1.5 {
		t.Errorf("Seconds: %v, want 1.5", n)
	}
	o := Calls("requests", 2).Of("pods").Varying()
	if o.Key() != "informer pods: requests" || !o.Varies || o.NoiseClass() != Count {
		t.Errorf("Of and Varying: %+v", o)
	}
}
