package httpapi

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/engine"
	"github.com/errandhq/errand/internal/jsonstrict"
	"github.com/errandhq/errand/internal/task"
)

// FuzzParseAdd: the add body parser never panics; it refuses with
// INVALID_ARGUMENT or PAYLOAD_TOO_LARGE naming a field, or returns 1–100
// tasks, each from a JSON object, whose payload and params are the raw
// JSON they were sent as.
func FuzzParseAdd(f *testing.F) {
	for _, s := range []string{
		`{"payload":{"orderId":"o-1"},"name":"r-1","delay":60}`, `[{"payload":1},{"name":"a"}]`,
		`{"tasks":[{"payload":[1,2]},{"runAt":5}]}`, `[null]`, `{"tasks":[null]}`, `{"PAYLOAD":1}`,
		`{"target":{"webhook":"https://example.com/h"}}`, "{\"payload\":\"\xff\"}", `{"tasks":null}`, `[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ins, err := parseAdd(raw, task.SourceAPI)
		if err != nil {
			te, ok := err.(*task.Error)
			if !ok || (te.Code != task.CodeInvalidArgument && te.Code != task.CodePayloadTooLarge) || te.Field == "" {
				t.Fatalf("refusal %#v", err)
			}
			return
		}
		if len(ins) < 1 || len(ins) > task.MaxAddBatch {
			t.Fatalf("%d tasks", len(ins))
		}
		if !json.Valid(raw) {
			t.Fatalf("accepted invalid JSON %q", raw)
		}
		for _, in := range ins {
			for _, r := range []json.RawMessage{in.Payload, in.Params} {
				if r != nil && !json.Valid(r) {
					t.Fatalf("raw field %q is not JSON", r)
				}
			}
			if !utf8.ValidString(in.Name) {
				t.Fatalf("name %q", in.Name)
			}
		}
		// Every item was an object: a body with one task parses the same
		// whether sent alone, in an array or in the envelope.
		if len(ins) == 1 && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("[")) {
			var items []json.RawMessage
			_ = json.Unmarshal(raw, &items)
			if again, err := parseAdd(items[0], task.SourceAPI); err != nil || len(again) != 1 || !bytes.Equal(again[0].Payload, ins[0].Payload) {
				t.Fatalf("%q alone: %v", items[0], err)
			}
		}
	})
}

// FuzzQueuePatch: a queue create or PATCH body either is refused naming a
// field, or leaves a queue whose every numeric setting is inside its
// documented bounds.
func FuzzQueuePatch(f *testing.F) {
	for _, s := range []string{
		`{"maxAttempts":3}`, `{"maxAgeSeconds":1e16}`, `{"ratePerSecond":1e-300}`, `{"maxConcurrent":null}`,
		`{"minBackoffSeconds":5,"maxBackoffSeconds":1}`, `{"mode":"pull","target":{"webhook":"https://a.example/"}}`,
		`{"deadLetterQueue":"q"}`, `{"MaxAttempts":3}`, `{"target":{"function":"app/x","bogus":1}}`, `{"maxDoublings":65}`,
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, create bool) {
		var b errandapi.QueueRequest
		decode := jsonstrict.DecodePatch // as patchQueue decodes
		if create {
			decode = jsonstrict.Decode
		}
		if err := decode(raw, &b, ""); err != nil {
			if te, ok := err.(*task.Error); !ok || te.Code != task.CodeInvalidArgument {
				t.Fatalf("decode refusal %#v", err)
			}
			return
		}
		q := task.NewQueue("i", "q", task.ModePush)
		if err := engine.QueuePatchOf(&b).Apply(q, create, task.URLRules{}); err != nil {
			if te, ok := err.(*task.Error); !ok || te.Code != task.CodeInvalidArgument || te.Field == "" {
				t.Fatalf("apply refusal %#v", err)
			}
			return
		}
		switch {
		case q.MaxAttempts < 1 || q.MaxAttempts > task.MaxQueueAttempts,
			q.RatePerSecond != 0 && (q.RatePerSecond < task.MinRatePerSecond || q.RatePerSecond > task.MaxRatePerSecond),
			q.MaxConcurrent < 0 || q.MaxConcurrent > task.MaxMaxConcurrent,
			q.MinBackoffSeconds < 0.001 || q.MaxBackoffSeconds > task.MaxBackoffBound || q.MaxBackoffSeconds < q.MinBackoffSeconds,
			q.MaxDoublings < 0 || q.MaxDoublings > task.MaxMaxDoublings,
			q.MaxAgeSeconds < 0 || q.MaxAgeSeconds > task.MaxMaxAgeSeconds,
			q.DeadlineSeconds < 1 || q.DeadlineSeconds > task.MaxDeadlineSeconds,
			q.Mode == task.ModePull && q.Target != nil:
			t.Fatalf("accepted %s into %+v", raw, q)
		}
	})
}
