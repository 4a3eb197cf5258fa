package deliver

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

// FuzzAttemptFrameMatchesMarshal: the hand-written attempt frame and token
// are byte for byte what errandapi.WorkerFrame's MarshalJSON and
// json.Marshal of Token make of the same attempt, for any strings and
// numbers. The payload is raw JSON as encoding/json writes it (compact,
// <, > and & escaped), which MarshalJSON passes unchanged.
func FuzzAttemptFrameMatchesMarshal(f *testing.F) {
	f.Add("inst-1", "0mvpn7bai3f9c2e81d4a7", "node-a.7f3k", "resize", "tok.sig", int64(1793042520000), 2, "o-1041")
	f.Add("i\"\\", "t<&>", "", "", "", int64(0), -1, "\u2028é😀\x00")
	f.Add("\xff\xfe", "\xed\xa0\x80", "\x1f", "f\n", "\xc0", int64(-5), 8, "<script>")
	f.Fuzz(func(t *testing.T, inst, id, lease, function, token string, deadline int64, depth int, payload string) {
		p, _ := json.Marshal(payload)
		// The depth stands in for the priority too: the frame encodes any int.
		tk := &task.Task{InstanceID: inst, ID: id, Queue: "q", LeaseID: lease, DeadlineAt: deadline, Depth: depth, Priority: depth, Payload: p}
		want, err := errandapi.WorkerFrame{Type: errandapi.FrameAttempt, LeaseID: lease, Function: function,
			DeadlineAt: deadline, Priority: depth, Token: token, Body: Body(tk)}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if got := attemptFrame(tk, function, token); !bytes.Equal(got, want) {
			t.Fatalf("attemptFrame:\n got %s\nwant %s", got, want)
		}
		want, err = json.Marshal(Token{Instance: inst, Task: id, Depth: depth, Expires: deadline + tokenLate})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendTokenJSON(nil, tk, ""); !bytes.Equal(got, want) {
			t.Fatalf("appendTokenJSON:\n got %s\nwant %s", got, want)
		}
		want, err = json.Marshal(Token{Instance: inst, Task: id, Depth: depth, Expires: deadline + tokenLate, Kind: TokenWebhook})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendTokenJSON([]byte("x"), tk, TokenWebhook); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("appendTokenJSON of a webhook's:\n got %s\nwant %s", got, want)
		}
	})
}

// TestAttemptFrameKeepsRawBytes: a payload and params with white space and
// HTML characters reach the worker as they were added, as they reach a
// webhook, and the frame decodes to the attempt.
func TestAttemptFrameKeepsRawBytes(t *testing.T) {
	tk := &task.Task{InstanceID: "i1", ID: "t1", Queue: "q", LeaseID: "l1", DeadlineAt: 99, Priority: 4,
		Payload: []byte(`{ "html" : "<b>&</b>",  "n": [1, 2] }`), Params: []byte(`{"a" : 1}`)}
	var f errandapi.WorkerFrame
	if err := f.UnmarshalJSON(attemptFrame(tk, "resize", "tok")); err != nil {
		t.Fatal(err)
	}
	if f.Type != errandapi.FrameAttempt || f.LeaseID != "l1" || f.Function != "resize" || f.DeadlineAt != 99 || f.Priority != 4 || f.Token != "tok" {
		t.Fatalf("frame %+v", f)
	}
	if !bytes.Equal(f.Body, Body(tk)) {
		t.Fatalf("body\n got %s\nwant %s", f.Body, Body(tk))
	}
}
