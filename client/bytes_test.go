package client_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/errandhq/errand/errandapi"
)

// TestPayloadKeepsItsBytes: a payload and a result full of <, > and & go
// through the client and come back from the API as they were sent, not
// escaped as \u003c (six times the size: a 20,000-byte payload of them was
// refused as 120,002 bytes, and stored changed).
func TestPayloadKeepsItsBytes(t *testing.T) {
	t.Parallel()
	e := start(t, options{})
	ctx := t.Context()
	mode := errandapi.ModePull
	if _, err := e.c.CreateQueue(ctx, "jobs", "html", errandapi.QueueRequest{Mode: &mode}); err != nil {
		t.Fatal(err)
	}
	payload := json.RawMessage(`{"html":"<b>` + strings.Repeat("<&>", 10_000) + `</b>"}`)
	added, err := e.c.AddTask(ctx, "jobs", "html", errandapi.NewTask{Payload: payload})
	if err != nil {
		t.Fatalf("a %d-byte payload: %v", len(payload), err)
	}
	leased, err := e.c.Lease(ctx, "jobs", "html", errandapi.LeaseRequest{})
	if err != nil || len(leased) != 1 {
		t.Fatalf("lease: %v %v", leased, err)
	}
	if string(leased[0].Payload) != string(payload) {
		t.Fatalf("leased payload changed: %.80s…", leased[0].Payload)
	}
	result := json.RawMessage(`"a & b <c>"`)
	if _, err := e.c.Ack(ctx, "jobs", added.ID, errandapi.AckRequest{LeaseID: leased[0].LeaseID, Result: result}); err != nil {
		t.Fatal(err)
	}
	// The API's own answer, read raw.
	resp, err := e.hc.Get(e.srv.URL + "/v1/tasks/jobs/tasks/" + added.ID)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"payload":`+string(payload)) ||
		!strings.Contains(string(raw), `"result":`+string(result)) {
		t.Fatalf("GET answered %d with escaped bytes: %.200s…", resp.StatusCode, raw)
	}
}
