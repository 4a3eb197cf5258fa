package errandapi

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestWorkerFrameMarshalJSONIsCompact: a frame's MarshalJSON gives exactly
// what json.Marshal of the frame gives (compact), but for <, > and &, which
// it leaves unescaped so that a frame is no longer than the bytes its bounds
// count; a sender may use it directly and skip json.Marshal's second pass.
func TestWorkerFrameMarshalJSONIsCompact(t *testing.T) {
	for _, f := range []*WorkerFrame{
		{Type: "hello", Group: "g<1>", Functions: []string{"a&b", "c"}, Slots: 4, SDK: "go/1"},
		{Type: "welcome", Worker: "w1", HeartbeatSeconds: 15},
		{Type: "attempt", LeaseID: "l1", Function: "f", DeadlineAt: 1764600000000, Token: "v1.t",
			Body: json.RawMessage("{ \"task\" : {\"id\":\"t1\"},\n \"payload\": {\"html\":\"<b>&amp;</b>\", \"n\": [1, 2 ,3]} }")},
		{Type: "done", LeaseID: "l1", Result: json.RawMessage(`{"ok": true, "s": "a<b"}`)},
		{Type: "failed", LeaseID: "l1", Error: "it broke: <x> & \"y\"\n"},
		{Type: "refused", LeaseID: "l1", Refusal: &ErrorDetail{Code: CodeLeaseLost, Message: "gone <now>"}},
		{Type: "defer", LeaseID: "l1", Seconds: 1.5},
		{Type: "recorded", LeaseID: "l1"},
	} {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		for esc, c := range map[string]string{`\u003c`: "<", `\u003e`: ">", `\u0026`: "&"} {
			want = bytes.ReplaceAll(want, []byte(esc), []byte(c))
		}
		got, err := f.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s frame:\nMarshalJSON  %s\njson.Marshal %s", f.Type, got, want)
		}
	}
}
