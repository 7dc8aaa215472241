package faultlog

import (
	"errors"
	"testing"
)

func TestWindows(t *testing.T) {
	mark := Mark()
	end := Begin(Blackhole, "all connections")
	open := Since(mark)
	if len(open) != 1 || open[0].Kind != Blackhole || open[0].Start.IsZero() || !open[0].End.IsZero() {
		t.Fatalf("an open window: %+v", open)
	}
	end()
	first := Since(mark)[0].End
	end()
	if got := Since(mark)[0].End; first.IsZero() || !got.Equal(first) {
		t.Errorf("end records once: %v then %v", first, got)
	}
	boom := errors.New("boom")
	if err := Around(Compaction, "revision 7", func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Around returns f's error: %v", err)
	}
	ws := Since(mark)
	if len(ws) != 2 || ws[1].Kind != Compaction || ws[1].End.Before(ws[1].Start) {
		t.Errorf("two windows in order, the second closed: %+v", ws)
	}
	if got := Since(Mark()); len(got) != 0 {
		t.Errorf("nothing since now: %+v", got)
	}
}
