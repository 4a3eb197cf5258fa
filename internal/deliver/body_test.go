package deliver

import (
	"encoding/json"
	"testing"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/task"
)

func katTask() *task.Task {
	return &task.Task{
		ID: "0mvpn7bai3f9c2e81d4a7", Queue: "emails", Name: "receipt-o-1041",
		Attempt: 1, MaxAttempts: 10, RunAt: 1793042520000, CreatedAt: 1793042460000,
		DeadlineAt: 1793043120000, Source: "api", Depth: 0,
		Payload: json.RawMessage(`{"orderId":"o-1041"}`),
	}
}

func TestBodyKeepsRawBytes(t *testing.T) {
	t.Parallel()
	tk := &task.Task{
		ID: "t1", Queue: "q", Attempt: 3, MaxAttempts: 5, RunAt: 1, CreatedAt: 2, DeadlineAt: 3,
		Source: "deadletter", Depth: 2, DeadLetterOf: "t0",
		Params:  json.RawMessage(`{ "a" : [1, 2] }`),
		Payload: json.RawMessage("{ \"html\": \"<b>&</b>\",\n  \"n\": 1.50 }"),
	}
	want := `{"task":{"id":"t1","queue":"q","name":null,"attempt":3,"maxAttempts":5,"runAt":1,"createdAt":2,"deadlineAt":3,"source":"deadletter","depth":2,"params":{ "a" : [1, 2] },"deadLetterOf":"t0"},"payload":{ "html": "<b>&</b>",` + "\n" + `  "n": 1.50 }}`
	got := Body(tk)
	if string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if !json.Valid(got) {
		t.Fatal("not JSON")
	}
}

func TestBodyNullsAndEscapes(t *testing.T) {
	t.Parallel()
	tk := &task.Task{ID: "t1", Queue: "q", Name: `odd"<name>`, Params: json.RawMessage("null")}
	var got struct {
		Task struct {
			Name         *string         `json:"name"`
			Params       json.RawMessage `json:"params"`
			DeadLetterOf *string         `json:"deadLetterOf"`
		} `json:"task"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(Body(tk), &got); err != nil {
		t.Fatal(err)
	}
	if got.Task.Name == nil || *got.Task.Name != `odd"<name>` || string(got.Task.Params) != "null" ||
		got.Task.DeadLetterOf != nil || string(got.Payload) != "null" {
		t.Fatalf("decoded %+v", got)
	}
}

// FuzzBodyMatchesEncodingJSON: the hand-written body is byte for byte what
// encoding/json's Marshal makes of the same task, for any strings and
// numbers. Payload and params are raw JSON kept as sent (TestBodyKeepsRawBytes);
// here they are strings encoded by encoding/json, which it emits unchanged.
func FuzzBodyMatchesEncodingJSON(f *testing.F) {
	f.Add("0mvpn7bai3f9c2e81d4a7", "emails", "receipt-o-1041", "api", "", 1, 10, int64(1793042520000), int64(-1), 0, "o-1041", "")
	f.Add("t\"1\\", "q<&>", "\x00\x01\b\f\n\r\t\x1f\x7f", "deadletter", "t0", -3, 0, int64(0), int64(9e18), 2, "\u2028\u2029é€😀", "x")
	f.Add("\xff\xfe", "a\xc3", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", 0, 0, int64(0), int64(0), 0, "\xc0\xaf", "<script>")
	f.Fuzz(func(t *testing.T, id, queue, name, source, deadLetterOf string, attempt, maxAttempts int, runAt, deadlineAt int64, depth int, payload, params string) {
		p, _ := json.Marshal(payload)
		tk := &task.Task{ID: id, Queue: queue, Name: name, Attempt: attempt, MaxAttempts: maxAttempts,
			RunAt: runAt, CreatedAt: runAt / 3, DeadlineAt: deadlineAt, Source: source, Depth: depth,
			DeadLetterOf: deadLetterOf, Payload: p}
		if params != "" {
			tk.Params, _ = json.Marshal(params)
		}
		orNil := func(s string) *string {
			if s == "" {
				return nil
			}
			return &s
		}
		want, err := json.Marshal(errandapi.DeliveryBody{Task: errandapi.DeliveryTask{ID: tk.ID, Queue: tk.Queue,
			Name: orNil(tk.Name), Attempt: tk.Attempt, MaxAttempts: tk.MaxAttempts, RunAt: tk.RunAt, CreatedAt: tk.CreatedAt,
			DeadlineAt: tk.DeadlineAt, Source: tk.Source, Depth: tk.Depth, Params: tk.Params,
			DeadLetterOf: orNil(tk.DeadLetterOf)}, Payload: tk.Payload})
		if err != nil {
			t.Fatal(err)
		}
		if got := Body(tk); string(got) != string(want) {
			t.Fatalf("got\n%q\nencoding/json\n%q", got, want)
		}
	})
}
