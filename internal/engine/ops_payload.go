package engine

import (
	"encoding/json"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/jsonstrict"
	"github.com/errandhq/errand/internal/task"
)

// instancePayload is the payload of instance.backup.
type instancePayload struct {
	Instance string `json:"instance"`
}

// decodePayload decodes a job's payload strictly, as the v1 API decodes a
// body: an unknown field or a wrong type is INVALID_ARGUMENT naming the
// field under payload (`payload.queue: must be a string, not number`).
func decodePayload(raw json.RawMessage, v any) error {
	return jsonstrict.Decode(raw, v, "payload")
}

// CheckOpsPayload checks a job's payload for its kind before the job is
// stored, so that bad input is refused at once rather than failing later.
func CheckOpsPayload(kind string, payload json.RawMessage) error {
	switch kind {
	case task.KindDLQReplay, task.KindDLQPurge:
		var sel errandapi.DLQSelector
		if err := decodePayload(payload, &sel); err != nil {
			return err
		}
		return checkSelector(&sel)
	case task.KindBackupExport:
		var none struct{}
		return decodePayload(payload, &none)
	case task.KindInstanceBackup:
		var p instancePayload
		if err := decodePayload(payload, &p); err != nil {
			return err
		}
		return task.ValidateQueueName(p.Instance, "payload.instance")
	}
	return task.Errorf(task.CodeUnknownTaskKind, "unknown kind %s", task.Quote(kind))
}

func checkSelector(sel *errandapi.DLQSelector) error {
	if err := task.ValidateQueueName(sel.Instance, "payload.instance"); err != nil {
		return err
	}
	n := 0
	if len(sel.IDs) > 0 {
		n++
		for _, id := range sel.IDs {
			if !task.ValidID(id) {
				return task.FieldErrorf(task.CodeInvalidArgument, "payload.ids", "%s is not an id errand made (1–%d letters, digits, '-', '_' or '.')", task.Quote(id), task.MaxIDLen)
			}
		}
	}
	if sel.Queue != "" {
		n++
		if err := task.ValidateQueueName(sel.Queue, "payload.queue"); err != nil {
			return err
		}
	}
	if sel.DeadLetterQueue != "" {
		n++
		if err := task.ValidateQueueName(sel.DeadLetterQueue, "payload.dead_letter_queue"); err != nil {
			return err
		}
	}
	if n != 1 {
		return task.FieldErrorf(task.CodeInvalidArgument, "payload", "name exactly one of ids, queue or dead_letter_queue")
	}
	return nil
}

// OpsScope is the instance a job of kind with payload touches, whose `full`
// grant its caller needs; "*" for a kind of the whole installation
// (backup.export). The payload must have passed CheckOpsPayload.
func OpsScope(kind string, payload json.RawMessage) string {
	switch kind {
	case task.KindDLQReplay, task.KindDLQPurge, task.KindInstanceBackup:
		var p instancePayload
		_ = json.Unmarshal(payload, &p)
		return p.Instance
	}
	return "*"
}
