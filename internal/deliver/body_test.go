package deliver

import (
	"encoding/json"
	"testing"

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
