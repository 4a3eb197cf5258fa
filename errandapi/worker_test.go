package errandapi

import (
	"bytes"
	"encoding/json"
	"reflect"
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
		{Type: "hello", Group: "g", Functions: []string{"f"}, Slots: 1, Batches: true},
		{Type: "welcome", Worker: "w1", HeartbeatSeconds: 15, Drains: true, Batches: true},
		{Type: "attempt", LeaseID: "l1", Function: "f", DeadlineAt: 1764600000000, Token: "v1.t",
			Body: json.RawMessage("{ \"task\" : {\"id\":\"t1\"},\n \"payload\": {\"html\":\"<b>&amp;</b>\", \"n\": [1, 2 ,3]} }")},
		{Type: "done", LeaseID: "l1", Result: json.RawMessage(`{"ok": true, "s": "a<b"}`)},
		{Type: "failed", LeaseID: "l1", Error: "it broke: <x> & \"y\"\n"},
		{Type: "refused", LeaseID: "l1", Refusal: &ErrorDetail{Code: CodeLeaseLost, Message: "gone <now>"}},
		{Type: "defer", LeaseID: "l1", Seconds: 1.5},
		{Type: "recorded", LeaseID: "l1"},
	} {
		want := marshalUnescaped(t, f)
		got, err := f.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s frame:\nMarshalJSON  %s\njson.Marshal %s", f.Type, got, want)
		}
	}
}

// TestWorkerFrameBareAsMarshal: the frames MarshalJSON writes by hand (a
// type and a lease id alone, of plain characters) are what json.Marshal
// writes, and a frame with any other field set, or a string that needs
// escaping, is not written by hand — each field of WorkerFrame is tried in
// turn, so that a field added later cannot be dropped by the shortcut.
func TestWorkerFrameBareAsMarshal(t *testing.T) {
	same := func(f *WorkerFrame) {
		t.Helper()
		want := marshalUnescaped(t, f)
		got, err := f.MarshalJSON()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%+v:\nMarshalJSON  %s (%v)\njson.Marshal %s", f, got, err, want)
		}
	}
	for _, f := range []*WorkerFrame{
		{Type: FrameRecorded, LeaseID: "n1.01JD3ZQ5W8Y2K4M6N8P0R2T4V6"}, {Type: FramePing}, {Type: FrameDraining},
		{Type: FrameDone, LeaseID: "a<b>&c~ "}, {}, {LeaseID: "l"},
	} {
		if _, ok := f.appendBare(nil); !ok {
			t.Fatalf("%+v is not written by hand", f)
		}
		same(f)
	}
	for _, f := range []*WorkerFrame{
		{Type: FrameRecorded, LeaseID: `a"b`}, {Type: FrameRecorded, LeaseID: `a\b`}, {Type: FrameRecorded, LeaseID: "é"},
		{Type: FrameRecorded, LeaseID: "a\x7f"}, {Type: FrameRecorded, LeaseID: "a\nb"}, {Type: "ping\u2028"},
	} {
		if _, ok := f.appendBare(nil); ok {
			t.Fatalf("%q / %q written by hand", f.Type, f.LeaseID)
		}
		same(f)
	}
	rt := reflect.TypeOf(WorkerFrame{})
	for i := range rt.NumField() {
		f := WorkerFrame{Type: FrameRecorded, LeaseID: "l1"}
		v := reflect.ValueOf(&f).Elem().Field(i)
		switch name := rt.Field(i).Name; {
		case name == "Type" || name == "LeaseID":
			continue
		case name == "Body" || name == "Result":
			v.SetBytes([]byte(`{"a":1}`))
		case v.Kind() == reflect.String:
			v.SetString("x")
		case v.Kind() == reflect.Bool:
			v.SetBool(true)
		case v.CanInt():
			v.SetInt(3)
		case v.CanFloat():
			v.SetFloat(1.5)
		case v.Kind() == reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		case v.Kind() == reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
		default:
			t.Fatalf("field %s of kind %s: teach this test to set it", name, v.Kind())
		}
		if _, ok := f.appendBare(nil); ok {
			t.Fatalf("a frame with %s set is written by hand", rt.Field(i).Name)
		}
	}
}

// marshalUnescaped is json.Marshal of f with <, > and & left as they are:
// what MarshalJSON writes.
func marshalUnescaped(t *testing.T, f *WorkerFrame) []byte {
	t.Helper()
	want, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	for esc, c := range map[string]string{`\u003c`: "<", `\u003e`: ">", `\u0026`: "&"} {
		want = bytes.ReplaceAll(want, []byte(esc), []byte(c))
	}
	return want
}
