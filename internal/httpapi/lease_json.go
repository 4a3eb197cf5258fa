package httpapi

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/errandhq/errand/errandapi"
	"github.com/errandhq/errand/internal/jsonout"
)

// writeLeased answers a lease: out as writeJSON writes it, byte for byte
// (FuzzLeaseAnswer), appended by hand — up to 1,000 tasks an answer, where
// encoding/json's reflection over each task's fields was most of what
// encoding it cost.
func writeLeased(w http.ResponseWriter, out errandapi.LeaseResponse) {
	buf := leaseBufs.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxLeaseBuf {
			*buf = (*buf)[:0]
			leaseBufs.Put(buf)
		}
	}()
	b, ok := appendLeased((*buf)[:0], out)
	*buf = b
	if !ok {
		writeJSON(w, http.StatusOK, out) // a raw value it cannot append: as before, encoding/json's answer
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// leaseBufs holds the buffers answers are appended in, as encoding/json
// keeps its own; one that grew past maxLeaseBuf (payloads of 64 KiB) is
// left to the collector.
var leaseBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

const maxLeaseBuf = 1 << 20

// appendLeased appends out and a newline as writeJSON's Encoder does (HTML
// escaping off); ok is false when a raw value cannot be (see
// jsonout.AppendRaw).
func appendLeased(b []byte, out errandapi.LeaseResponse) (_ []byte, ok bool) {
	if out.Tasks == nil {
		return append(b, "{\"tasks\":null}\n"...), true
	}
	b = append(b, `{"tasks":[`...)
	for i := range out.Tasks {
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = appendLeasedTask(b, &out.Tasks[i]); !ok {
			return b, false
		}
	}
	return append(b, "]}\n"...), true
}

// appendLeasedTask appends t's object, its fields in LeasedTask's order.
func appendLeasedTask(b []byte, t *errandapi.LeasedTask) (_ []byte, ok bool) {
	str := func(b []byte, s string) []byte { return jsonout.AppendString(b, s, false) }
	strPtr := func(b []byte, s *string) []byte {
		if s == nil {
			return append(b, "null"...)
		}
		return str(b, *s)
	}
	b = append(b, `{"id":`...)
	b = str(b, t.ID)
	b = append(b, `,"queue":`...)
	b = str(b, t.Queue)
	b = append(b, `,"name":`...)
	b = strPtr(b, t.Name)
	b = append(b, `,"payload":`...)
	if b, ok = jsonout.AppendRaw(b, t.Payload); !ok {
		return b, false
	}
	b = append(b, `,"params":`...)
	if b, ok = jsonout.AppendRaw(b, t.Params); !ok {
		return b, false
	}
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(t.Attempts), 10)
	b = append(b, `,"leaseId":`...)
	b = str(b, t.LeaseID)
	b = append(b, `,"leaseExpiresAt":`...)
	b = strconv.AppendInt(b, t.LeaseExpiresAt, 10)
	b = append(b, `,"runAt":`...)
	b = strconv.AppendInt(b, t.RunAt, 10)
	b = append(b, `,"createdAt":`...)
	b = strconv.AppendInt(b, t.CreatedAt, 10)
	b = append(b, `,"source":`...)
	b = str(b, t.Source)
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(t.Depth), 10)
	b = append(b, `,"priority":`...)
	b = strconv.AppendInt(b, int64(t.Priority), 10)
	b = append(b, `,"deadLetterOf":`...)
	b = strPtr(b, t.DeadLetterOf)
	if t.DeliveryToken != "" {
		b = append(b, `,"deliveryToken":`...)
		b = str(b, t.DeliveryToken)
	}
	return append(b, '}'), true
}
