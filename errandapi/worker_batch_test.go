package errandapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestSplitBatch: a message that is not an array is one frame, passed on
// as it is (decoding it says whether it is one); an array of objects is
// a batch, its frames in order; any other array is refused.
func TestSplitBatch(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want []string // nil: ErrBadBatch
	}{
		{`{"type":"ping"}`, []string{`{"type":"ping"}`}},
		{`null`, []string{`null`}},
		{` "x"`, []string{` "x"`}},
		{`[{"type":"done","leaseId":"a"},{"type":"ping"}]`, []string{`{"type":"done","leaseId":"a"}`, `{"type":"ping"}`}},
		{" [ {\"type\":\"ping\", \"x\":[1,{}]} ,\n{}\t] ", []string{`{"type":"ping", "x":[1,{}]}`, `{}`}},
		{`[{"type":"ping"}]`, []string{`{"type":"ping"}`}},
		{`[]`, nil},
		{`[ ]`, nil},
		{`[1]`, nil},
		{`[{"type":"ping"},null]`, nil},
		{`[[{"type":"ping"}]]`, nil},
		{`[{"type":"ping"}`, nil},
		{`[{"type":"ping"},]`, nil},
		{`[{"type":"ping"}] x`, nil},
		{`[{"type":"ping"}][]`, nil},
		{`[{"type":}]`, nil},
		{`[{"a":` + strings.Repeat(`[`, 1500) + strings.Repeat(`]`, 1500) + `}]`, []string{`{"a":` + strings.Repeat(`[`, 1500) + strings.Repeat(`]`, 1500) + `}`}},
	} {
		got, err := SplitBatch([]byte(c.msg))
		if c.want == nil {
			if !errors.Is(err, ErrBadBatch) {
				t.Errorf("%.60s: %q, %v; want ErrBadBatch", c.msg, got, err)
			}
			continue
		}
		if err != nil || len(got) != len(c.want) {
			t.Errorf("%.60s: %q, %v; want %q", c.msg, got, err, c.want)
			continue
		}
		for i := range got {
			if string(got[i]) != c.want[i] {
				t.Errorf("%.60s: frame %d is %.60s, want %.60s", c.msg, i, got[i], c.want[i])
			}
		}
	}
}

// FuzzSplitBatch holds SplitBatch to encoding/json on arrays: a batch is
// what json.Unmarshal reads as a non-empty array of objects, with the
// same bytes for each.
func FuzzSplitBatch(f *testing.F) {
	for _, s := range []string{`[{"type":"ping"},{"type":"done","leaseId":"a","result":[1,"]"]}]`, `[]`, `[{}`, `[{},1]`, ` [ {} ] `} {
		f.Add([]byte(s))
	}
	for _, s := range frameSeeds {
		f.Add([]byte("[" + s + "," + s + "]"))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		got, err := SplitBatch(msg)
		if t := bytes.TrimLeft(msg, " \t\r\n"); len(t) == 0 || t[0] != '[' {
			if err != nil || len(got) != 1 || !bytes.Equal(got[0], msg) {
				panic(fmt.Sprintf("not an array: %q, %v", got, err))
			}
			return
		}
		var raw []json.RawMessage
		jerr := json.Unmarshal(msg, &raw)
		ok := jerr == nil && len(raw) > 0
		for _, r := range raw {
			ok = ok && r[0] == '{'
		}
		if ok != (err == nil) {
			t.Fatalf("%q: SplitBatch %q, %v; json.Unmarshal %q, %v", msg, got, err, raw, jerr)
		}
		for i := range got {
			if !bytes.Equal(got[i], raw[i]) {
				t.Fatalf("%q: frame %d %q, json.Unmarshal's %q", msg, i, got[i], raw[i])
			}
		}
	})
}

// TestPackBatches: frames go in order into as few messages as fit in
// MaxWorkerFrame bytes each, a longer frame alone, and each message splits
// back into its frames.
func TestPackBatches(t *testing.T) {
	frame := func(i, size int) []byte {
		head := fmt.Sprintf(`{"type":"done","leaseId":"l%d","result":"`, i)
		return []byte(head + strings.Repeat("x", size-len(head)-2) + `"}`)
	}
	sizes := []int{100, MaxWorkerFrame / 2, MaxWorkerFrame/2 - 104, 60, MaxWorkerFrame + 10, 70, 80, MaxWorkerFrame - 2}
	var frames [][]byte
	for i, n := range sizes {
		frames = append(frames, frame(i, n))
	}
	msgs := PackBatches(frames)
	var lens, back []int
	for _, m := range msgs {
		fs, err := SplitBatch(m)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) > 1 && len(m) > MaxWorkerFrame {
			t.Errorf("a batch of %d frames is %d bytes, past %d", len(fs), len(m), MaxWorkerFrame)
		}
		if len(fs) == 1 && m[0] != '{' {
			t.Errorf("a lone frame went as a batch: %.20s", m)
		}
		lens = append(lens, len(fs))
		for _, f := range fs {
			back = append(back, len(f))
		}
	}
	// 100 + half + (half - 104) + 2 commas + 2 brackets is the bound exactly.
	if want := []int{3, 1, 1, 2, 1}; fmt.Sprint(lens) != fmt.Sprint(want) {
		t.Errorf("frames a message %v, want %v", lens, want)
	}
	if fmt.Sprint(back) != fmt.Sprint(sizes) {
		t.Errorf("frames back %v, want %v", back, sizes)
	}
	if one := PackBatches(frames[4:5]); len(one) != 1 || !bytes.Equal(one[0], frames[4]) {
		t.Error("a lone frame is not sent as it is")
	}
}

// TestOutbox: a lone frame is written at once, as it is; frames sent
// while a write is under way go together in the next message, in the
// order they came; and a failed write is the error of every frame it
// carried.
func TestOutbox(t *testing.T) {
	var msgs []string
	o := &Outbox{Write: func(m []byte) error { msgs = append(msgs, string(m)); return nil }}
	if err := o.Send([]byte(`{"type":"ping"}`)); err != nil || len(msgs) != 1 || msgs[0] != `{"type":"ping"}` {
		t.Fatalf("a lone frame: %q, %v", msgs, err)
	}

	for _, fail := range []bool{false, true} {
		msgs = nil
		broken := errors.New("broken")
		var mu sync.Mutex
		queued, all := 0, make(chan struct{})
		first := true
		o := &Outbox{
			Write: func(m []byte) error {
				msgs = append(msgs, string(m))
				if fail && len(msgs) == 1 {
					return broken
				}
				return nil
			},
			Queued: func(int) {
				mu.Lock()
				if queued++; queued == 4 {
					close(all)
				}
				mu.Unlock()
			},
			// The first write waits until every sender's frame is queued.
			Writing: func() {
				if first {
					first = false
					<-all
				}
			},
		}
		errs := make([]error, 4)
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() { errs[i] = o.Send([]byte(fmt.Sprintf(`{"type":"done","leaseId":"l%d"}`, i))) })
		}
		wg.Wait()
		if len(msgs) > 2 {
			t.Fatalf("4 frames, the first write held until all were queued, went in %d messages: %q", len(msgs), msgs)
		}
		var seen []string
		for _, m := range msgs {
			fs, err := SplitBatch([]byte(m))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				seen = append(seen, string(f))
			}
		}
		if len(seen) != 4 {
			t.Fatalf("frames written %q, want the 4 sent", seen)
		}
		// With fail, the frames of the first message failed with it, and
		// only they.
		for i, err := range errs {
			inFirst := strings.Contains(msgs[0], fmt.Sprintf(`"l%d"`, i))
			if want := fail && inFirst; (err != nil) != want || err != nil && !errors.Is(err, broken) {
				t.Errorf("fail %v: sender %d's error %v (its frame in the first of %d messages: %v)", fail, i, err, len(msgs), inFirst)
			}
		}
	}
}

// TestBatchesSaid: hello's and welcome's batches travel both ways, and a
// frame without it reads as not said (a side from before batches).
func TestBatchesSaid(t *testing.T) {
	for _, f := range []WorkerFrame{
		{Type: FrameHello, Group: "app", Functions: []string{"f"}, Slots: 2, Batches: true},
		{Type: FrameWelcome, Worker: "w1", HeartbeatSeconds: 10, Drains: true, Batches: true},
	} {
		b, err := f.MarshalJSON()
		if err != nil || !bytes.Contains(b, []byte(`"batches":true`)) {
			t.Fatalf("%s: %s, %v", f.Type, b, err)
		}
		var back WorkerFrame
		if err := back.UnmarshalJSON(b); err != nil || !back.Batches {
			t.Fatalf("%s back: %+v, %v", f.Type, back, err)
		}
	}
	var old WorkerFrame
	if err := old.UnmarshalJSON([]byte(`{"type":"welcome","worker":"w1","heartbeatSeconds":10,"drains":true}`)); err != nil || old.Batches {
		t.Fatalf("an old welcome: %+v, %v", old, err)
	}
}
