package errandapi

import "encoding/json"

// DeliveryBody is what a push attempt delivers: the JSON body of a webhook
// request, and the body of a connected worker's attempt frame. The payload
// and the params are as they were added, byte for byte.
type DeliveryBody struct {
	Task    DeliveryTask    `json:"task"`
	Payload json.RawMessage `json:"payload"`
}

// DeliveryTask is the task a delivery is an attempt of.
type DeliveryTask struct {
	ID           string          `json:"id"`
	Queue        string          `json:"queue"`
	Name         *string         `json:"name"`
	Attempt      int             `json:"attempt"`
	MaxAttempts  int             `json:"maxAttempts"`
	RunAt        int64           `json:"runAt"`
	CreatedAt    int64           `json:"createdAt"`
	DeadlineAt   int64           `json:"deadlineAt"`
	Source       string          `json:"source"`
	Depth        int             `json:"depth"`
	Params       json.RawMessage `json:"params"`
	DeadLetterOf *string         `json:"deadLetterOf"`
}

// UnmarshalJSON decodes a delivery's body as encoding/json decodes the
// struct, faster: a worker reads one an attempt. The body errand sends
// (its known fields, plain strings, integers) is read in one pass (jscan);
// anything else is decoded by encoding/json, so the result, and any error,
// is always encoding/json's (TestDeliveryBodyAsUnmarshal,
// FuzzDeliveryBody).
func (d *DeliveryBody) UnmarshalJSON(raw []byte) error {
	v := *d // fields the body does not name keep their values, as encoding/json leaves them
	if scanDelivery(raw, &v) {
		*d = v
		return nil
	}
	type deliveryBody DeliveryBody // the struct without this method
	return json.Unmarshal(raw, (*deliveryBody)(d))
}

// deliveryFields and deliveryTaskFields are the JSON names of DeliveryBody
// and DeliveryTask: a key equal to one of them but for case is left to
// encoding/json, which matches it.
var (
	deliveryFields     = []string{"task", "payload"}
	deliveryTaskFields = []string{"id", "queue", "name", "attempt", "maxAttempts", "runAt", "createdAt", "deadlineAt",
		"source", "depth", "params", "deadLetterOf"}
)

// scanDelivery reads a body in the shape errand sends into v; false: it
// is not, and v may hold part of it.
func scanDelivery(raw []byte, v *DeliveryBody) bool {
	s := jscan{b: raw}
	ok := s.object(deliveryFields, func(key []byte) (known, ok bool) {
		switch string(key) {
		case "task":
			ok = s.deliveryTask(&v.Task)
		case "payload":
			v.Payload, ok = s.raw()
		default:
			return false, false
		}
		return true, ok
	})
	return ok && s.end()
}

// deliveryTask reads a delivery's task object into t.
func (s *jscan) deliveryTask(t *DeliveryTask) bool {
	return s.object(deliveryTaskFields, func(key []byte) (known, ok bool) {
		switch string(key) {
		case "id":
			t.ID, ok = s.str()
		case "queue":
			t.Queue, ok = s.str()
		case "name":
			t.Name, ok = s.strPtr()
		case "attempt":
			t.Attempt, ok = s.intValue()
		case "maxAttempts":
			t.MaxAttempts, ok = s.intValue()
		case "runAt":
			t.RunAt, ok = s.integer()
		case "createdAt":
			t.CreatedAt, ok = s.integer()
		case "deadlineAt":
			t.DeadlineAt, ok = s.integer()
		case "source":
			t.Source, ok = s.str()
		case "depth":
			t.Depth, ok = s.intValue()
		case "params":
			t.Params, ok = s.raw()
		case "deadLetterOf":
			t.DeadLetterOf, ok = s.strPtr()
		default:
			return false, false
		}
		return true, ok
	})
}
