package faultlog

import (
	"context"
	"errors"
	"testing"
)

func TestWindows(t *testing.T) {
	l := New()
	end := l.Begin(Blackhole, "all connections")
	open := l.Windows()
	if len(open) != 1 || open[0].Kind != Blackhole || open[0].Start.IsZero() || !open[0].End.IsZero() {
		t.Fatalf("an open window: %+v", open)
	}
	end()
	first := l.Windows()[0].End
	end()
	if got := l.Windows()[0].End; first.IsZero() || !got.Equal(first) {
		t.Errorf("end records once: %v then %v", first, got)
	}
	boom := errors.New("boom")
	if err := l.Around(Compaction, "revision 7", func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("Around returns f's error: %v", err)
	}
	ws := l.Windows()
	if len(ws) != 2 || ws[1].Kind != Compaction || ws[1].End.Before(ws[1].Start) {
		t.Errorf("two windows in order, the second closed: %+v", ws)
	}
	if got := New().Windows(); len(got) != 0 {
		t.Errorf("a new log is empty: %+v", got)
	}
}

func TestNoLogRecordsNothing(t *testing.T) {
	var l *Log
	l.Begin(Blackhole, "")()
	if err := l.Around(Compaction, "", func() error { return nil }); err != nil || l.Windows() != nil {
		t.Errorf("a nil log records nothing: %v %v", err, l.Windows())
	}
	if FromContext(context.Background()) != nil {
		t.Error("a context without a log has none")
	}
}

func TestContextCarriesTheSpecsLog(t *testing.T) {
	mine, other := New(), New()
	FromContext(NewContext(context.Background(), mine)).Begin(Restore, "")()
	if len(mine.Windows()) != 1 || len(other.Windows()) != 0 {
		t.Errorf("the fault went to the context's log only: %v %v", mine.Windows(), other.Windows())
	}
}
