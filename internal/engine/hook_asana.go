package engine

import (
	"context"
	"crypto/subtle"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// asanaSecretHeader carries the secret Asana's webhook handshake makes:
// the target must echo it, and Asana then signs each event with it
// (X-Hook-Signature: the hex HMAC-SHA256 of the body).
const asanaSecretHeader = "X-Hook-Secret"

// asanaHandshake answers Asana's handshake, a POST carrying X-Hook-Secret
// (and no event), which Asana makes while its API creates a webhook: the
// secret is echoed in the answer (200, no body) and nothing is added. A
// hook without a secret takes this one as its secret, from then on
// checking every call's signature with it (the URL was the capability
// until then, and a secret only narrows what it lets in); a hook whose
// secret it is echoes it again (Asana's retry of the handshake); a hook
// with another secret refuses it, UNAUTHENTICATED. A secret that is no
// hook secret (task.ValidateHookSecret) is INVALID_ARGUMENT naming the
// header.
func (e *Engine) asanaHandshake(ctx context.Context, h *Hook, secret string) (*HookAdded, error) {
	if err := task.ValidateHookSecret(secret); err != nil {
		return nil, task.FieldErrorf(task.CodeInvalidArgument, asanaSecretHeader, "must be 16–256 printable ASCII characters without spaces, as Asana makes it")
	}
	same := func(have string) bool { return subtle.ConstantTimeCompare([]byte(have), []byte(secret)) == 1 }
	taken := task.Errorf(task.CodeUnauthenticated, "this hook has a secret already, and this handshake's %s is not it: "+
		"an Asana webhook needs a hook of its own, made without a secret", asanaSecretHeader)
	if h.Rule.HookSecret != "" {
		if !same(h.Rule.HookSecret) {
			return nil, taken
		}
		return &HookAdded{EchoSecret: secret}, nil
	}
	_, err := e.store.TriggerUpdate(ctx, store.TriggerRef{InstanceID: h.Rule.InstanceID, ID: h.Rule.ID}, func(tr *task.Trigger) error {
		switch {
		case tr.HookSecret == "":
			tr.HookSecret, tr.UpdatedAt = secret, e.now()
		case !same(tr.HookSecret): // another handshake came first
			return taken
		}
		return nil
	})
	if task.IsCode(err, task.CodeNotFound) {
		return nil, task.Errorf(task.CodeNotFound, "no enabled hook of instance %s has this URL", task.Quote(h.Instance.Name))
	}
	if err != nil {
		return nil, err
	}
	e.rulesChanged()
	return &HookAdded{EchoSecret: secret}, nil
}
