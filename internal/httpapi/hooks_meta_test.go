package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/errandhq/errand/internal/deliver"
)

// TestHookMeta: Meta's Webhooks (WhatsApp, Messenger, Instagram) check a
// callback URL with a GET — hub.mode=subscribe, a challenge to echo, and
// the verify token, which must be the hook's token — and sign their
// notifications as GitHub does (X-Hub-Signature-256 with the app's
// secret), taking only a 200 as received: a signed notification is added
// and answered 200, while GitHub's calls keep their 202. A GET that is no
// such check is 400 naming the parameter, a wrong verify token 401, an
// unknown hook 404; none adds anything.
func TestHookMeta(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.do("POST", "/v1/tasks/jobs/queues", `{"name":"out","mode":"pull"}`).want(t, 201, "")
	secret := "6c2a0e3f5b1d4a7e9c8b0f2d4e6a8c1b"
	path := b.hookRule(t, secret)
	token := path[strings.LastIndex(path, "/")+1:]
	get := func(q url.Values) res {
		t.Helper()
		req, _ := http.NewRequest("GET", b.srv.URL+path+"?"+q.Encode(), nil)
		return b.send(req)
	}
	check := url.Values{"hub.mode": {"subscribe"}, "hub.challenge": {"1158201444"}, "hub.verify_token": {token}}
	r := get(check).want(t, 200, "")
	if string(r.raw) != "1158201444" || r.header.Get("Content-Type") != "text/plain; charset=utf-8" || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("the check answered %q (%s, %s)", r.raw, r.header.Get("Content-Type"), r.header.Get("X-Content-Type-Options"))
	}
	for _, c := range []struct {
		change      func(q url.Values)
		status      int
		code, field string
	}{
		{func(q url.Values) { q.Set("hub.verify_token", "meatyhamhock") }, 401, "UNAUTHENTICATED", ""},
		{func(q url.Values) { q.Del("hub.verify_token") }, 401, "UNAUTHENTICATED", ""},
		{func(q url.Values) { q.Del("hub.mode") }, 400, "INVALID_ARGUMENT", "hub.mode"},
		{func(q url.Values) { q.Set("hub.mode", "unsubscribe") }, 400, "INVALID_ARGUMENT", "hub.mode"},
		{func(q url.Values) { q.Del("hub.challenge") }, 400, "INVALID_ARGUMENT", "hub.challenge"},
		{func(q url.Values) { q.Set("hub.challenge", "<script>alert(1)</script> x") }, 400, "INVALID_ARGUMENT", "hub.challenge"},
		{func(q url.Values) { q.Set("hub.challenge", strings.Repeat("9", 257)) }, 400, "INVALID_ARGUMENT", "hub.challenge"},
	} {
		q := url.Values{}
		for k, v := range check {
			q[k] = v
		}
		c.change(q)
		r := get(q).want(t, c.status, c.code)
		if c.field != "" {
			r.names(t, c.field)
		}
		if c.status == 401 && !strings.Contains(r.message(), "hook's token") {
			t.Errorf("a wrong verify token: %s", r.message())
		}
	}
	b.send(mustRequest(t, "GET", b.srv.URL+"/v1/hooks/jobs/hk_00000000000000000000000000000000?"+check.Encode())).want(t, 404, "NOT_FOUND")

	// A notification, signed with the app's secret: added, answered 200.
	note := []byte(`{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"field":"messages","value":{"messages":[{"id":"wamid.1","text":{"body":"hi"}}]}}]}]}`)
	added := b.hookCall(path, note, map[string]string{"Content-Type": "application/json", "X-Hub-Signature-256": deliver.SignGitHub(secret, note)}).want(t, 200, "")
	if id, _ := added.body["id"].(string); id == "" || added.body["duplicate"] != false {
		t.Fatalf("the notification answered %s", added.raw)
	}
	b.hookCall(path, note, map[string]string{"X-Hub-Signature-256": deliver.SignGitHub("another-secret-of-the-app", note)}).want(t, 401, "UNAUTHENTICATED")
	// GitHub's call of the same shape, with its event header, is GitHub's: 202.
	b.hookCall(path, note, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": deliver.SignGitHub(secret, note)}).want(t, 202, "")
	if n := len(b.do("GET", "/v1/tasks/jobs/queues/out/tasks", nil).want(t, 200, "").list("tasks")); n != 2 {
		t.Fatalf("%d tasks, want 2 (the checks add none)", n)
	}
}

// mustRequest is http.NewRequest for a request the test builds whole.
func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
