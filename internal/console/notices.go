package console

import (
	"net/url"
	"strconv"

	"github.com/errandhq/errand/errandapi"
)

// queueNotice is the queue page's word on the action that sent the browser
// back to it (?done=…, and ?n= the tasks a purge removed), "" for none.
// A link can pick one of these fixed notices, but it cannot put words of
// its own on the page: only a number is read from the URL.
func queueNotice(q url.Values) string {
	switch q.Get("done") {
	case "created":
		return "The queue is created."
	case "saved":
		return "Settings saved."
	case "paused":
		return "The queue is paused: it delivers and leases nothing until it is resumed."
	case "resumed":
		return "The queue is resumed."
	case "purged":
		return "Purged: " + removed(q) + " removed; the queue and its settings stay."
	case "task-deleted":
		return "The task's record is deleted; its name is free again."
	}
	return ""
}

// settingsNotice is the settings page's word on a save (?done=saved) or,
// on the webhook key's page, a rotation (?done=rotated).
func settingsNotice(q url.Values) string {
	switch q.Get("done") {
	case "saved":
		return "Settings saved."
	case "rotated":
		return "The webhook key is rotated: the next delivery is signed with it."
	}
	return ""
}

// rulesNotice is the rules page's word on a rule created, switched or
// deleted (?done=created|enabled|disabled|deleted&rule=ID), said only
// while that rule's state bears it out, as a task page's is: a created
// hook rule's notice gives its URL.
func rulesNotice(q url.Values, rules []errandapi.Trigger) string {
	found := false
	for _, tr := range rules {
		if tr.ID != q.Get("rule") {
			continue
		}
		found = true
		switch {
		case q.Get("done") == "created" && tr.Hook != nil && tr.Hook.Path != "":
			return "Rule " + tr.ID + " is created: each POST to " + tr.Hook.Path + " on this server adds a task."
		case q.Get("done") == "created":
			return "Rule " + tr.ID + " is created."
		case q.Get("done") == "enabled" && tr.Enabled:
			return "Rule " + tr.ID + " is enabled."
		case q.Get("done") == "disabled" && !tr.Enabled:
			return "Rule " + tr.ID + " is disabled: it adds nothing until it is enabled again."
		}
	}
	if q.Get("done") == "deleted" && q.Get("rule") != "" && !found {
		return "Rule " + q.Get("rule") + " is deleted."
	}
	return ""
}

// queuesNotice is the queues page's word on a queue deleted (?done=deleted,
// ?n= its tasks) or on the instance just created (?done=created).
func queuesNotice(q url.Values) string {
	switch q.Get("done") {
	case "deleted":
		return "The queue is deleted, with " + removed(q) + "."
	case "created":
		return "The instance is created, with its queue default."
	}
	return ""
}

// removed is ?n= as "N tasks" ("its tasks" when absent or not a number).
func removed(q url.Values) string {
	n, err := strconv.Atoi(q.Get("n"))
	switch {
	case err != nil || n < 0:
		return "its tasks"
	case n == 1:
		return "1 task"
	}
	return strconv.Itoa(n) + " tasks"
}

// doneURL is u with ?done=done, and n=count when count ≥ 0.
func doneURL(u, done string, count int) string {
	u += "?done=" + done
	if count >= 0 {
		u += "&n=" + strconv.Itoa(count)
	}
	return u
}
