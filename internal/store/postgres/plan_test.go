package postgres

import (
	"context"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/errandhq/errand/internal/store"
	"github.com/errandhq/errand/internal/task"
)

// planNow is the synthetic "now" of the plan data set (epoch ms).
const planNow int64 = 1_700_000_000_000

// fillPlanData loads rows tasks spread over 50 instances of 4 queues each
// (80% succeeded, 5% failed, 2% cancelled, 8% pending, 2% retrying, 3%
// running, a tenth of them named), plus a backlog of rows/20 pending tasks
// (at most 50,000, half of them due) in inst-0/q0, the queue the plans
// claim from; then ANALYZE.
func fillPlanData(t *testing.T, pool *pgxpool.Pool, rows int) {
	t.Helper()
	ctx := t.Context()
	backlog := min(50_000, max(rows/20, 10_000))
	stmts := []string{
		`INSERT INTO instances (id, org, name, created_at, rate_limit, retention_days, max_in_flight, webhook_key)
		 SELECT 'inst-' || i, 'org-' || (i % 10), 'jobs-' || i, 0, 0, 7, 50, 'whsec_x' FROM generate_series(0, 49) AS i`,
		`INSERT INTO queues (instance_id, name, created_at, max_age_seconds, rate_per_second, min_backoff_seconds,
		   max_backoff_seconds, max_concurrent, max_attempts, max_doublings, deadline_seconds, target_control, paused, mode, target)
		 SELECT 'inst-' || i, 'q' || k, 0, 0, 0, 10, 3600, 0, 10, 16, 600, true, false, 'push', '{"webhook":"https://example.com/h"}'
		 FROM generate_series(0, 49) AS i, generate_series(0, 3) AS k`,
		fmt.Sprintf(`INSERT INTO tasks (run_at, created_at, started_at, deadline_at, finished_at, lease_expires_at,
		   attempt, max_attempts, deadline_seconds, depth, pull, instance_id, id, queue, state, name, lease_id,
		   source, dead_letter_of, last_error, target, attempts, params, payload, result)
		 SELECT
		   CASE WHEN s IN ('PENDING', 'RETRY_WAIT', 'RUNNING') THEN %[1]d - 3600000 + (g * 7919) %% 7200000
		        ELSE created + 10 END,
		   created,
		   CASE WHEN s = 'RUNNING' THEN %[1]d - 1000 ELSE 0 END,
		   CASE WHEN s = 'RUNNING' THEN %[1]d + 600000 ELSE 0 END,
		   CASE WHEN s IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN created + 1000 ELSE 0 END,
		   CASE WHEN s = 'RUNNING' THEN %[1]d - 30000 + g %% 60000 ELSE 0 END,
		   CASE WHEN s IN ('PENDING', 'CANCELLED') THEN 0 ELSE 1 END, 10, 0, 0, false,
		   'inst-' || (g %% 50), 't-' || g, 'q' || ((g / 50) %% 4), s,
		   CASE WHEN g %% 10 = 0 THEN 'name-' || g END,
		   CASE WHEN s = 'RUNNING' THEN 'lease-' || g ELSE '' END,
		   'api', NULL, '', NULL,
		   CASE WHEN s IN ('PENDING', 'RUNNING', 'CANCELLED') THEN '[]'::jsonb
		        ELSE '[{"attempt":1,"status":"succeeded","startedAt":1,"endedAt":2,"httpStatus":200}]'::jsonb END,
		   NULL, convert_to('{"to":"someone@example.com","template":"receipt","order":' || g || ',"lines":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}]}', 'UTF8'),
		   CASE WHEN s = 'SUCCEEDED' THEN '\x7b7d'::bytea END
		 FROM (SELECT g, %[1]d - %[2]d * 1000 + g * 1000 AS created,
		         CASE WHEN g %% 100 < 80 THEN 'SUCCEEDED' WHEN g %% 100 < 85 THEN 'FAILED'
		              WHEN g %% 100 < 87 THEN 'CANCELLED' WHEN g %% 100 < 95 THEN 'PENDING'
		              WHEN g %% 100 < 97 THEN 'RETRY_WAIT' ELSE 'RUNNING' END AS s
		       FROM generate_series(1::bigint, %[2]d) AS g) AS x`, planNow, rows),
		fmt.Sprintf(`INSERT INTO tasks (run_at, created_at, started_at, deadline_at, finished_at, lease_expires_at,
		   attempt, max_attempts, deadline_seconds, depth, pull, instance_id, id, queue, state, name, lease_id,
		   source, last_error, payload)
		 SELECT %[1]d - 600000 + g * 1200000 / %[2]d, %[1]d - 600000, 0, 0, 0, 0, 0, 10, 0, 0, false,
		   'inst-0', 'b-' || g, 'q0', 'PENDING', NULL, '', 'api', '', convert_to('{"n":' || g || '}', 'UTF8')
		 FROM generate_series(1::bigint, %[2]d) AS g`, planNow, backlog),
		`ANALYZE instances`, `ANALYZE queues`, `ANALYZE tasks`,
	}
	for _, q := range stmts {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatalf("plan data: %v\n%s", err, q)
		}
	}
}

// explain returns the plan of sql with args: the custom plan PostgreSQL
// makes for these values, or (generic) the plan it would cache for any
// values. With analyze the statement runs, inside a transaction rolled
// back after.
func explain(ctx context.Context, pool *pgxpool.Pool, sql string, args []any, generic, analyze bool) (string, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	query := "EXPLAIN " + sql
	if analyze {
		query = "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, SUMMARY ON) " + sql
	}
	if generic {
		if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
			return "", err
		}
		if _, err := tx.Exec(ctx, `PREPARE plan_check AS `+sql); err != nil {
			return "", err
		}
		defer conn.Exec(context.WithoutCancel(ctx), `DEALLOCATE plan_check`) //nolint:errcheck
		// EXECUTE's arguments are not parameters of the EXPLAIN: they are
		// written out.
		var ps []string
		for _, a := range args {
			ps = append(ps, literal(a))
		}
		query = "EXPLAIN EXECUTE plan_check"
		if len(ps) > 0 {
			query += "(" + strings.Join(ps, ", ") + ")"
		}
		args = nil
	}
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	return strings.Join(lines, "\n"), nil
}

// literal writes v as a SQL literal.
func literal(v any) string {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	array := func(items []string, typ string) string {
		return "ARRAY[" + strings.Join(items, ", ") + "]::" + typ + "[]"
	}
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return quote(x)
	case int, int32, int64:
		return fmt.Sprint(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64) + "::float8"
	case bool:
		return strconv.FormatBool(x)
	case []byte:
		if x == nil {
			return "NULL"
		}
		return quote(`\x`+hex.EncodeToString(x)) + "::bytea"
	case []string:
		var items []string
		for _, s := range x {
			items = append(items, quote(s))
		}
		return array(items, "text")
	case []bool:
		var items []string
		for _, b := range x {
			items = append(items, strconv.FormatBool(b))
		}
		return array(items, "bool")
	case []int16:
		var items []string
		for _, n := range x {
			items = append(items, fmt.Sprint(n))
		}
		return array(items, "int2")
	case []int32:
		var items []string
		for _, n := range x {
			items = append(items, fmt.Sprint(n))
		}
		return array(items, "int4")
	case []int64:
		var items []string
		for _, n := range x {
			items = append(items, fmt.Sprint(n))
		}
		return array(items, "int8")
	case []pgtype.TID:
		var items []string
		for _, t := range x {
			items = append(items, fmt.Sprintf("'(%d,%d)'", t.BlockNumber, t.OffsetNumber))
		}
		return array(items, "tid")
	case [][]byte:
		var items []string
		for _, b := range x {
			items = append(items, literal(b))
		}
		return array(items, "bytea")
	}
	panic(fmt.Sprintf("literal: %T", v))
}

// planRows is the size of the plan data set: ERRAND_TEST_EXPLAIN_ROWS, or
// 20,000 (enough for the planner to prefer every index it should).
func planRows(t *testing.T) int {
	if v := os.Getenv("ERRAND_TEST_EXPLAIN_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			t.Fatalf("ERRAND_TEST_EXPLAIN_ROWS=%q: want a number ≥ 1000", v)
		}
		return n
	}
	return 20_000
}

// TestQueryPlans checks with EXPLAIN that every hot statement reaches tasks
// through the index meant for it, never a sequential scan, and that claims
// and listings never sort: in the custom plan for realistic values and in
// the generic plan PostgreSQL may cache for a prepared statement (where
// partial indexes are usable only thanks to the literal state lists).
// With -v it prints the claim's plans, run (EXPLAIN ANALYZE), as
// docs/postgres.md shows them.
func TestQueryPlans(t *testing.T) {
	s := OpenTest(t)
	defer s.Close()
	ctx := t.Context()
	rows := planRows(t)
	fillPlanData(t, s.pool, rows)

	var n100 []int32
	var ids100, insts100, strs100, running100, jsons100 []string
	var i64s100 []int64
	var bytes100 [][]byte
	for i := range 100 {
		n100 = append(n100, 1)
		ids100 = append(ids100, fmt.Sprint("b-", i+1))
		insts100 = append(insts100, "inst-0")
		strs100 = append(strs100, "x")
		running100 = append(running100, "RUNNING")
		jsons100 = append(jsons100, `{"attempt":1,"status":"succeeded","startedAt":1}`)
		i64s100 = append(i64s100, planNow)
		bytes100 = append(bytes100, []byte(`{}`))
	}
	var ctids100 []pgtype.TID
	for i := range 100 {
		ctids100 = append(ctids100, pgtype.TID{BlockNumber: uint32(i / 10), OffsetNumber: uint16(i%10 + 1), Valid: true})
	}
	claimSet := []any{ctids100, insts100, ids100, running100, n100, n100, i64s100, i64s100, strs100, i64s100}
	finishSuccess := []any{insts100, ids100, strs100, i64s100, i64s100, bytes100, n100, jsons100}
	finish := append(finishSuccess[:len(finishSuccess):len(finishSuccess)], running100, n100, n100, i64s100, i64s100,
		i64s100, strs100, i64s100, strs100, make([]bool, 100))
	var tr taskRows
	for i := range 100 {
		name := ""
		if i%2 == 0 {
			name = fmt.Sprint("name-", i*10)
		}
		if err := tr.add(pullTaskForPlan(fmt.Sprint("new-", i), name)); err != nil {
			t.Fatal(err)
		}
	}
	list := func(st task.State, named bool) (string, []any) {
		name := ""
		if named {
			name = "name-100"
		}
		n := 0
		if named {
			n = 1
		}
		return listSQL[st][n], []any{"inst-0", "q0", name, nil, decodeStart(store.OrderOf(st)), "", 51}
	}

	type check struct {
		name   string
		sql    string
		args   []any
		index  []string // indexes the plan must use ("a|b": either)
		noSort bool
	}
	checks := []check{
		{"claim", sqlClaimDue, []any{"inst-0", "q0", planNow, 100, 0, 0, 0.0, 0, true, int64(math.MinInt64), true, []string{}}, []string{"tasks_urgent", "tasks_due"}, true},
		{"claim routed", sqlClaimDue, []any{"inst-0", "q0", planNow, 100, 0, 0, 0.0, 0, false, int64(math.MinInt64), false, []string{"app/x"}}, []string{"tasks_urgent", "tasks_due"}, true},
		{"claim with limits", sqlClaimDue, []any{"inst-0", "q0", planNow, 100, 500, 50, 100.0, 10, true, int64(math.MinInt64), true, []string{}}, []string{"tasks_urgent", "tasks_due", "tasks_running"}, true},
		{"claim in room", sqlClaimDueInRoom, []any{"inst-0", "q0", planNow, true, int64(math.MinInt64), true, []string{}}, []string{"tasks_urgent", "tasks_due"}, true},
		{"claim set", sqlClaimSet, claimSet, []string{"Tid Scan"}, true},
		{"claim set alike", sqlClaimSetAlike, []any{ctids100, ids100, n100, strs100, "inst-0", "RUNNING", 3, planNow, planNow, planNow}, []string{"Tid Scan"}, true},
		{"finish", sqlFinish, finish, []string{"tasks_pkey"}, true},
		{"finish success", sqlFinishSuccess, finishSuccess, []string{"tasks_pkey"}, true},
		{"heartbeat", sqlHeartbeat, []any{insts100, ids100, strs100, planNow}, []string{"tasks_pkey"}, true},
		{"get", sqlTaskGet, []any{"inst-0", "b-7"}, []string{"tasks_pkey"}, true},
		{"key get", qKeyGet, []any{"k1", "acme"}, []string{"api_keys_pkey"}, true},
		{"add", qTaskInsert, tr.args(), []string{"tasks_name"}, false},
		{"add plain", qTaskInsertPlain, tr.args(), []string{"tasks_name"}, false},
		{"counts", qQueueCounts, []any{"inst-0", "q0", 10_000}, []string{"tasks_due", "tasks_running", "tasks_retry", "tasks_done"}, true},
		{"purge", qQueuePurge, []any{"inst-0", "q1"}, []string{"tasks_created", "tasks_running"}, true},
		{"purge waiting", qQueuePurgeWaiting, []any{"inst-0", "q1"}, []string{"tasks_created"}, true},
		{"purge running", qQueuePurgeRunning, []any{"inst-0", "q1"}, []string{"tasks_running"}, true},
		{"remove purged", sqlRemovePurged, []any{[]string{"inst-0"}, []string{"t-1"}, []string{"l/purged"}}, []string{"tasks_pkey"}, true},
		{"expired", sqlExpired, []any{planNow, 500}, []string{"tasks_running"}, false},
		{"next due", sqlNextDue, nil, []string{"tasks_due", "tasks_running"}, false},
		{"delete finished", sqlDeleteFinished, []any{planNow + 30*86_400_000, 1000}, []string{"tasks_done"}, false},
		{"activity", qQueueActivity, []any{"inst-0", "q0", planNow - 3_600_000, planNow + 60_000, 100_000}, []string{"tasks_created", "tasks_running", "tasks_done"}, false},
		{"claim any", sqlClaimAny, []any{"inst-0", "q0", planNow}, []string{"tasks_due"}, true},
		{"due queues", sqlDueQueues, []any{planNow}, []string{"tasks_due"}, false},
		{"backlog", sqlBacklog, []any{planNow, 100_000}, []string{"tasks_due"}, false},
		{"next due after", sqlNextDueAfter, []any{planNow}, []string{"tasks_due"}, false},
		{"queue next run at", sqlQueueNextRunAt, []any{"inst-0", "q0", planNow}, []string{"tasks_due"}, false},
		{"get many", sqlTaskGetMany, []any{"inst-0", ids100}, []string{"tasks_pkey"}, false},
		{"held by", sqlHeldBy, []any{[]string{"node-1"}, 500}, []string{"tasks_running"}, false},
		{"claim any routed", sqlClaimAnyRouted, []any{"inst-0", "q0", planNow, false, int64(math.MinInt64), false, []string{"app/x"}}, []string{"tasks_due"}, true},
	}
	for _, l := range []struct {
		st     task.State
		named  bool
		index  string
		noSort bool
	}{
		{task.Pending, false, "tasks_due", true},
		{task.RetryWait, false, "tasks_retry", false},
		{task.Running, false, "tasks_running", false},
		{task.Succeeded, false, "tasks_done", true},
		{task.Failed, false, "tasks_done", false},
		// tasks_created in order; the RUNNING rows it leaves out from
		// tasks_running, sorted (the work in flight).
		{"", false, "tasks_created,tasks_running", false},
		{"", true, "tasks_name", false},
		{task.Pending, true, "tasks_name", false},
	} {
		sql, args := list(l.st, l.named)
		checks = append(checks, check{fmt.Sprintf("list %q named=%v", l.st, l.named), sql, args, strings.Split(l.index, ","), l.noSort})
	}
	for _, c := range checks {
		for _, generic := range []bool{false, true} {
			plan, err := explain(ctx, s.pool, c.sql, c.args, generic, false)
			if err != nil {
				t.Fatalf("%s (generic %v): %v", c.name, generic, err)
			}
			what := fmt.Sprintf("%s (generic %v)", c.name, generic)
			if strings.Contains(plan, "Seq Scan on tasks") {
				t.Errorf("%s scans tasks:\n%s", what, plan)
			}
			for _, idx := range c.index {
				found := false
				for _, alt := range strings.Split(idx, "|") {
					found = found || strings.Contains(plan, "using "+alt+" on") || strings.Contains(plan, "on "+alt) ||
						alt == "Tid Scan" && strings.Contains(plan, "Tid Scan on tasks")
				}
				if !found {
					t.Errorf("%s does not use %s:\n%s", what, idx, plan)
				}
			}
			if c.noSort && strings.Contains(plan, "Sort") {
				t.Errorf("%s sorts:\n%s", what, plan)
			}
		}
	}
	for _, c := range []check{checks[0], checks[1], checks[2]} {
		plan, err := explain(ctx, s.pool, c.sql, c.args, false, true)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("EXPLAIN ANALYZE %s, %d rows (+ backlog):\n%s\n%s", c.name, rows, c.sql, plan)
	}
	plan, err := explain(ctx, s.pool, sqlClaimDue, checks[0].args, true, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generic plan of claim:\n%s", plan)
}

// decodeStart is the cursor key of a listing's first page.
func decodeStart(o store.ListOrder) int64 {
	k, _, _ := store.DecodeCursor(o, "")
	return k
}

// pullTaskForPlan is a new task of inst-0/q0 for the add statement's plan.
func pullTaskForPlan(id, name string) *task.Task {
	return &task.Task{InstanceID: "inst-0", ID: id, Queue: "q0", Name: name, State: task.Pending,
		MaxAttempts: 10, RunAt: planNow, CreatedAt: planNow, Source: task.SourceAPI, Payload: []byte(`{}`)}
}
