// Command bench runs the same workloads on errand and on its peers (River on
// PostgreSQL and SQLite, Asynq on Redis), one system at a time, several
// rounds, and prints medians. See README.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

// sizes are the workload sizes of one mode (quick or full).
type sizes struct {
	insertN, insertBatch int
	burnDown             int
	burnDownCap          map[string]int // per system, where the full size does not fit the time budget
	push                 int            // push: tasks delivered to the loopback webhook receiver
	steady               time.Duration
	backlog              int // backlog: tasks scheduled in the future before the steady window
	idleSamples          int
	idleBudget           time.Duration  // per idle variant and round
	idleDefaults         bool           // also run idle with each system's default settings
	backlogCap           map[string]int // per system, like burnDownCap
	rounds               map[string]int // per workload, where it differs from defaultRounds
	nodesN               int            // nodes: tasks per node count and workload
}

// backlogOf is the backlog size for system name.
func (sz sizes) backlogOf(name string) int {
	if c, ok := sz.backlogCap[name]; ok {
		return min(sz.backlog, c)
	}
	return sz.backlog
}

var (
	// quickSizes fit the quick run in under 3 minutes on the 2-core machine.
	quickSizes = sizes{
		insertN: 20_000, insertBatch: 100,
		burnDown: 10_000,
		burnDownCap: map[string]int{
			"river-sqlite": 3_000, // ~1,500–3,000/s
		},
		push:        10_000,
		steady:      4 * time.Second,
		backlog:     30_000,
		idleSamples: 30, idleBudget: 2 * time.Second,
		// Default settings poll about once a second: a handful of samples
		// per round is all 3 minutes allow, so quick runs the tuned settings
		// only.
		idleDefaults: false,
		rounds:       map[string]int{"steady": 1, "nodes": 1},
		nodesN:       10_000,
	}
	// fullSizes fit the full run in under 20 minutes.
	fullSizes = sizes{
		insertN: 100_000, insertBatch: 100,
		burnDown: 1_000_000,
		burnDownCap: map[string]int{
			// River on PostgreSQL works 11,000–28,000 jobs/s here and
			// preloads ~60,000/s: 1,000,000 took 107 s a round.
			"river-pg": 400_000,
			// River's SQLite driver works ~1,300–3,300 jobs/s.
			"river-sqlite": 20_000,
			// Asynq works ~5,000–10,000 tasks/s and enqueues ~30,000/s.
			"asynq": 50_000,
			// errand works 6,000–15,000 tasks/s here, and preloads over
			// HTTP 17,000–30,000/s.
			"errand-sqlite":        100_000,
			"errand-sqlite-full":   100_000,
			"errand-pg":            100_000,
			"errand-inproc-sqlite": 100_000,
			"errand-inproc-pg":     100_000,
			"errand-worker-sqlite": 100_000,
			"errand-worker-pg":     100_000,
		},
		push:    30_000,
		steady:  30 * time.Second,
		backlog: 1_000_000,
		backlogCap: map[string]int{
			// River's SQLite driver adds ~12,000 jobs/s: 1,000,000 would
			// take 80 s before the window.
			"river-sqlite": 200_000,
		},
		idleSamples: 200, idleBudget: 8 * time.Second,
		idleDefaults: true,
		// The nodes workload's six measurements (1–3 nodes × pull, push)
		// once: ~1–2.5 minutes of the 20 (a quick run's 35–75 s, its
		// timed part ×5).
		rounds: map[string]int{"nodes": 1},
		nodesN: 50_000,
	}
)

// backlogCheckpointURL, when set (--backlog-checkpoint), is the PostgreSQL
// server on which a CHECKPOINT runs between the backlog's preload and its
// steady window.
var backlogCheckpointURL string

// defaultRounds is the rounds of every workload but backlog (its 1M
// preload is the cost; --backlog-rounds) unless sizes.rounds or --rounds
// says otherwise.
const defaultRounds = 2

// insertCallSize is the insert workload's tasks per call, for the systems'
// settings lines (sizes.insertBatch, or --insert-batch).
var insertCallSize = 100

// steadyCallSize is the steady workload's tasks per add call (--steady-batch),
// and steadyProducers its concurrent producers when set (--steady-producers;
// 0: each system's own, 4 but for River on SQLite's 1).
var (
	steadyCallSize  = 100
	steadyProducers = 0
)

// producers is how many producers a steady window runs: steadyProducers
// when set, otherwise the system's own n.
func producers(n int) int {
	if steadyProducers > 0 {
		return steadyProducers
	}
	return n
}

var allWorkloads = []string{"insert", "burndown", "push", "steady", "idle", "backlog", "nodes"}

// result is one run of one workload on one system.
type result struct {
	n         int
	seconds   float64
	perSecond float64 // 0 = not a throughput workload
	lat       []time.Duration
	rssMB     float64
	nodes     []nodeCell // nodes: one per node count and workload
}

// row is one line of the report: the rounds of one (system, workload).
type row struct {
	system, store, workload string
	settings                string
	backlog                 int // backlog: the future tasks in the store
	rounds                  []result
}

// jsonRow is the --json output.
type jsonRow struct {
	System       string   `json:"system"`
	Store        string   `json:"store"`
	Workload     string   `json:"workload"`
	N            int      `json:"n"`
	Seconds      *float64 `json:"seconds,omitempty"`
	PerSecond    *float64 `json:"perSecond,omitempty"`
	PerSecondMin *float64 `json:"perSecondMin,omitempty"`
	PerSecondMax *float64 `json:"perSecondMax,omitempty"`
	P50ms        *float64 `json:"p50ms,omitempty"`
	P99ms        *float64 `json:"p99ms,omitempty"`
	RSSMB        *float64 `json:"rssMB,omitempty"`
	Rounds       int      `json:"rounds"`
	Backlog      int      `json:"backlog,omitempty"` // backlog: future tasks in the store during the window
	Settings     string   `json:"settings,omitempty"`
	// Nodes is the nodes workload's table: per node count and workload,
	// medians over the rounds.
	Nodes []jsonNodeCell `json:"nodes,omitempty"`
}

func main() {
	var (
		quick      = flag.Bool("quick", false, "small sizes, finishes in under 3 minutes")
		jsonFile   = flag.String("json", "", "also write the results as JSON to `FILE`")
		systemsArg = flag.String("systems", "", "comma-separated systems to run (default: all): "+strings.Join(systemNames(), ","))
		workArg    = flag.String("workloads", strings.Join(allWorkloads, ","), "comma-separated workloads to run")
		rounds     = flag.Int("rounds", 0, "rounds of each workload on each system (default: 2, quick steady 1; backlog: --backlog-rounds)")
		blRounds   = flag.Int("backlog-rounds", 1, "rounds of the backlog workload (its preload is the expensive part)")
		blCheckpt  = flag.Bool("backlog-checkpoint", false, "diagnostic: run a PostgreSQL CHECKPOINT after the backlog's preload, before its steady window (untimed), so that the preload's dirty pages are not written out during the window")
		backlogN   = flag.Int("backlog-n", 0, "override the backlog workload's size (tasks scheduled in the future)")
		pgURL      = flag.String("pg", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "PostgreSQL `URL` of an existing database; fresh databases are created beside it and dropped after each run")
		redisAddr  = flag.String("redis", "127.0.0.1:6379", "Redis `address`")
		redisDB    = flag.Int("redis-db", 9, "Redis database number used by Asynq; it is FLUSHDB'd before and after every run (never use 0)")
		backlog    = flag.Int("steady-backlog", 1000, "steady workload: producers pause while this many added tasks have not started")
		burnN      = flag.Int("burndown-n", 0, "override the burn-down size (every system, caps ignored)")
		steadyD    = flag.Duration("steady-time", 0, "override the steady window")
		idleN      = flag.Int("idle-samples", 0, "override the idle samples per variant and round")
		idleBudget = flag.Duration("idle-budget", 0, "override the idle time budget per variant and round")
		idleDef    = flag.Bool("idle-defaults", false, "quick mode: also run idle with default settings (full mode always does)")
		cpuProfile = flag.String("cpuprofile", "", "write a CPU profile of this process to `FILE`")
		memProfile = flag.String("memprofile", "", "write this process's allocations (the allocs profile) to `FILE` when the run ends")
		pushN      = flag.Int("push-n", 0, "override the push workload's size")
		insBatch   = flag.Int("insert-batch", 0, "override the insert workload's tasks per call (default 100; 1: one task a call, as a web handler adds its work)")
		stBatch    = flag.Int("steady-batch", 100, "the steady and backlog windows' tasks per add call (1: one task a call, as web handlers add their work)")
		stProd     = flag.Int("steady-producers", 0, "the steady and backlog windows' concurrent producers (default: each system's own, 4; River on SQLite 1)")
		errandBin  = flag.String("errand-bin", "", "use this errand `binary` instead of building ../cmd/errand (e.g. a profiling build)")
		errandSrc  = flag.String("errand-src", "..", "the errand repository `DIR` whose ./cmd/errand is built")
		errandTun  = flag.String("errand-tuning", "", "override errand's settings: `key=value,…` of insertClients, leaseWorkers, leaseCount, ackConcurrency, batchAck, maxInFlight, steadyMode (push|pull)")
		rawConc    = flag.Int("raw-concurrency", 64, "raw-http: concurrent POSTs to the receiver")
		nodesN     = flag.Int("nodes-n", 0, "override the nodes workload's size (tasks per node count and workload)")
		nodesK     = flag.String("nodes-counts", "1,2,3", "the nodes workload's node counts, `k,…`")
		nodesWL    = flag.String("nodes-workloads", "pull,push", "the nodes workload's measurements per node count, of pull, push, add (single adds to a pull queue) and push-add (single adds to a push queue, delivered): `list`")
	)
	flag.Parse()
	defer runAtExit()
	if *redisDB == 0 {
		fatalf("--redis-db 0 refused: the harness flushes the database it uses")
	}
	if *rounds < 0 || *blRounds < 1 {
		fatalf("--rounds and --backlog-rounds must be at least 1")
	}

	tun, err := parseErrandTuning(defaultErrandTuning, *errandTun)
	if err != nil {
		fatalf("%v", err)
	}
	if *rawConc < 1 {
		fatalf("--raw-concurrency must be at least 1")
	}
	opts := Options{PGAdminURL: *pgURL, RedisAddr: *redisAddr, RedisDB: *redisDB, Quick: *quick, Named: splitList(*systemsArg),
		ErrandBin: *errandBin, ErrandRoot: *errandSrc, ErrandTuning: tun, RawConcurrency: *rawConc}
	if *blCheckpt {
		backlogCheckpointURL = *pgURL
	}
	sz := fullSizes
	if *quick {
		sz = quickSizes
	}
	if *burnN > 0 {
		sz.burnDown, sz.burnDownCap = *burnN, nil
	}
	if *insBatch > 0 {
		sz.insertBatch = *insBatch
	}
	insertCallSize = sz.insertBatch
	if *stBatch < 1 || *stProd < 0 {
		fmt.Fprintln(os.Stderr, "bench: --steady-batch must be at least 1 and --steady-producers at least 0")
		os.Exit(2)
	}
	steadyCallSize, steadyProducers = *stBatch, *stProd
	if *pushN > 0 {
		sz.push = *pushN
	}
	if *steadyD > 0 {
		sz.steady = *steadyD
	}
	if *backlogN > 0 {
		sz.backlog = *backlogN
	}
	if *idleN > 0 {
		sz.idleSamples = *idleN
	}
	if *idleBudget > 0 {
		sz.idleBudget = *idleBudget
	}
	if *idleDef {
		sz.idleDefaults = true
	}
	if err := setNodeCells(*nodesK, *nodesWL); err != nil {
		fatalf("%v", err)
	}
	if *nodesN > 0 {
		sz.nodesN = *nodesN
	}
	roundsOf := func(workload string) int {
		switch {
		case workload == "backlog":
			return *blRounds
		case *rounds > 0:
			return *rounds
		case sz.rounds[workload] > 0:
			return sz.rounds[workload]
		}
		return defaultRounds
	}

	var systems []System
	want := splitList(*systemsArg)
	for _, w := range want {
		if !slices.Contains(systemNames(), w) {
			fatalf("unknown system %q (known: %s)", w, strings.Join(systemNames(), ","))
		}
	}
	workloads := splitList(*workArg)
	for _, w := range workloads {
		if !slices.Contains(allWorkloads, w) {
			fatalf("unknown workload %q (known: %s)", w, strings.Join(allWorkloads, ","))
		}
	}
	// The push workload is read beside raw-http and raw-http-wide, the
	// receiver's own limit in the same run: they join whenever push runs on
	// a system that has it.
	if len(want) > 0 && slices.Contains(workloads, "push") &&
		slices.ContainsFunc(want, func(n string) bool { return strings.HasPrefix(n, "errand-") }) {
		for _, raw := range []string{"raw-http", "raw-http-wide"} {
			if !slices.Contains(want, raw) {
				want = append(want, raw)
				logf("bench: %s added: the push workload is read beside it", raw)
			}
		}
	}
	for _, f := range systemFactories {
		if len(want) == 0 || slices.Contains(want, f.name) {
			systems = append(systems, f.make(opts))
		}
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fatalf("%v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatalf("%v", err)
		}
		defer pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		defer func() {
			f, err := os.Create(*memProfile)
			if err != nil {
				fatalf("%v", err)
			}
			defer f.Close()
			if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
				fatalf("%v", err)
			}
		}()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// Preflight: a system that cannot run here is skipped for the whole run.
	var skipped []string
	failed := false
	kept := systems[:0]
	for _, s := range systems {
		if pf, ok := s.(Preflighter); ok {
			pctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			err := pf.Preflight(pctx)
			cancel()
			if err != nil {
				var se *skipError
				if !errors.As(err, &se) {
					failed = true
				}
				logf("bench: %s skipped: %v", s.Name(), err)
				skipped = append(skipped, fmt.Sprintf("%s skipped: %v", s.Name(), err))
				continue
			}
		}
		kept = append(kept, s)
	}
	systems = kept

	mode := "full"
	if *quick {
		mode = "quick"
	}
	var per []string
	for _, w := range workloads {
		per = append(per, fmt.Sprintf("%s %d", w, roundsOf(w)))
	}
	roundsText := "rounds: " + strings.Join(per, ", ")
	logf("bench: %s mode, %s, systems %s, workloads %s", mode, roundsText, names(systems), strings.Join(workloads, ","))
	start := time.Now()

	var rows []*row
	get := func(s System, workload, settings string) *row {
		for _, r := range rows {
			if r.system == s.Name() && r.workload == workload {
				return r
			}
		}
		r := &row{system: s.Name(), store: s.Store(), workload: workload, settings: settings}
		if workload == "backlog" {
			r.backlog = sz.backlogOf(s.Name())
		}
		rows = append(rows, r)
		return r
	}

	var took []time.Duration // wall time of each workload, all rounds and systems
	for _, w := range workloads {
		wstart := time.Now()
		for round := 1; round <= roundsOf(w); round++ {
			for _, s := range systems {
				if !supports(s, w) {
					continue
				}
				for _, tuned := range idleVariants(s, w, sz) {
					name := w
					if w == "idle" {
						name = map[bool]string{false: "idle-default", true: "idle-tuned"}[tuned]
					}
					rw := get(s, name, settingsOf(s, w, tuned, sz))
					if ctx.Err() != nil {
						break
					}
					res, err := runOnce(ctx, s, w, tuned, sz, *backlog)
					if err != nil {
						failed = true
						logf("  %-14s %-13s round %d: ERROR %v", s.Name(), name, round, err)
						continue
					}
					rw.rounds = append(rw.rounds, res)
					logf("  %5.0fs %-14s %-13s round %d: %s", time.Since(start).Seconds(), s.Name(), name, round, describe(res))
				}
			}
		}
		took = append(took, time.Since(wstart))
	}
	elapsed := time.Since(start)

	printTable(os.Stdout, rows)
	printRatios(os.Stdout, rows)
	printPushRatios(os.Stdout, rows)
	printNodes(os.Stdout, rows)
	fmt.Printf("\n%s mode, %s, took %s. per second: median of rounds (min–max); p50/p99: over the latencies of all rounds pooled; rss: peak RSS of the worker process, largest round (backlog: of its steady window, after the preload).\n",
		mode, roundsText, elapsed.Round(time.Second))
	var spent []string
	for i, d := range took {
		spent = append(spent, workloads[i]+" "+fmtDuration(d))
	}
	fmt.Printf("time per workload: %s\n", strings.Join(spent, ", "))
	printSettings(os.Stdout, systems, workloads, sz)
	for _, m := range skipped {
		fmt.Printf("\n%s\n", m)
	}

	if *jsonFile != "" {
		if err := writeJSON(*jsonFile, rows); err != nil {
			fatalf("writing %s: %v", *jsonFile, err)
		}
	}
	pprof.StopCPUProfile() // os.Exit skips the deferred one
	runAtExit()
	if ctx.Err() != nil {
		fatalf("interrupted")
	}
	if failed {
		os.Exit(1)
	}
}

// runOnce sets up a fresh store, runs one workload and tears down.
func runOnce(ctx context.Context, s System, workload string, tuned bool, sz sizes, backlog int) (res result, err error) {
	setupCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err = s.Setup(setupCtx)
	cancel()
	if err != nil {
		return res, fmt.Errorf("setup: %w", err)
	}
	defer func() {
		// Tear down even when interrupted.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if terr := s.Teardown(tctx); terr != nil && err == nil {
			err = fmt.Errorf("teardown: %w", terr)
		}
	}()

	resetPeakRSS()
	switch workload {
	case "insert":
		d, err := s.Insert(ctx, sz.insertN, sz.insertBatch)
		if err != nil {
			return res, err
		}
		res = result{n: sz.insertN, seconds: d.Seconds(), perSecond: float64(sz.insertN) / d.Seconds()}
	case "burndown":
		n := sz.burnDown
		if c, ok := sz.burnDownCap[s.Name()]; ok {
			n = min(n, c)
		}
		d, err := s.BurnDown(ctx, n)
		if err != nil {
			return res, err
		}
		res = result{n: n, seconds: d.Seconds(), perSecond: float64(n) / d.Seconds()}
	case "push":
		ps, ok := s.(Pusher)
		if !ok {
			return res, fmt.Errorf("%s has no push workload", s.Name())
		}
		n := sz.push
		d, err := ps.Push(ctx, n)
		if err != nil {
			return res, err
		}
		res = result{n: n, seconds: d.Seconds(), perSecond: float64(n) / d.Seconds()}
	case "steady":
		sr, err := s.Steady(ctx, sz.steady, backlog)
		if err != nil {
			return res, err
		}
		res = result{n: sr.Worked, seconds: sr.Elapsed.Seconds(), perSecond: float64(sr.Worked) / sr.Elapsed.Seconds(), lat: sr.Latency}
	case "backlog":
		bl, ok := s.(Backlogger)
		if !ok {
			return res, fmt.Errorf("%s has no backlog workload", s.Name())
		}
		// The preload is untimed: only logged, with its peak RSS.
		t0 := time.Now()
		nb := sz.backlogOf(s.Name())
		if err := bl.AddFuture(ctx, nb); err != nil {
			return res, fmt.Errorf("adding the backlog: %w", err)
		}
		d := time.Since(t0)
		if backlogCheckpointURL != "" {
			c0 := time.Now()
			if err := pgAdmin(ctx, backlogCheckpointURL, "CHECKPOINT"); err != nil {
				return res, fmt.Errorf("checkpoint after the backlog: %w", err)
			}
			logf("  %s backlog: CHECKPOINT after the preload took %.1fs (untimed, --backlog-checkpoint)", s.Name(), time.Since(c0).Seconds())
		}
		logf("  %s backlog: %s future tasks added in %.1fs (%s/s, untimed), peak rss %.0f MB meanwhile",
			s.Name(), thousands(float64(nb)), d.Seconds(), thousands(float64(nb)/d.Seconds()), workerPeakRSSMB(s))
		// The figure is the steady window's peak, with the backlog held.
		resetPeakRSS()
		if r, ok := s.(RSSResetter); ok {
			r.ResetPeakRSS()
		}
		sr, err := s.Steady(ctx, sz.steady, backlog)
		if err != nil {
			return res, err
		}
		res = result{n: sr.Worked, seconds: sr.Elapsed.Seconds(), perSecond: float64(sr.Worked) / sr.Elapsed.Seconds(), lat: sr.Latency}
	case "nodes":
		ns, ok := s.(NodeScaler)
		if !ok {
			return res, fmt.Errorf("%s has no nodes workload", s.Name())
		}
		t0 := time.Now()
		cells, err := ns.Nodes(ctx, sz.nodesN)
		if err != nil {
			return res, err
		}
		res = result{n: sz.nodesN, seconds: time.Since(t0).Seconds(), nodes: cells}
	case "idle":
		lat, d, err := runIdle(ctx, s, tuned, sz)
		if err != nil {
			return res, err
		}
		res = result{n: len(lat), seconds: d.Seconds(), lat: lat}
	}
	res.rssMB = workerPeakRSSMB(s)
	return res, nil
}

// workerPeakRSSMB is the peak RSS of the process that runs s's workers: its
// own (RSSReporter) or this one.
func workerPeakRSSMB(s System) float64 {
	if r, ok := s.(RSSReporter); ok {
		return r.PeakRSSMB()
	}
	return peakRSSMB("self")
}

// settingsOf is s's settings text for a workload, with the backlog size.
func settingsOf(s System, workload string, tuned bool, sz sizes) string {
	st := s.Settings(workload, tuned)
	if workload == "backlog" {
		st = fmt.Sprintf("backlog of %s tasks scheduled %gh ahead; %s", thousands(float64(sz.backlogOf(s.Name()))), futureDelay.Hours(), st)
	}
	return st
}

// fmtDuration is d to the second: 45s, 1m02s, 1h05m00s.
func fmtDuration(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, sec := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, sec)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, sec)
	}
	return fmt.Sprintf("%ds", sec)
}

// runIdle adds one task at a time: sz.idleSamples of them, or as many as fit
// in sz.idleBudget, spaced as the probe's Pacing says.
func runIdle(ctx context.Context, s System, tuned bool, sz sizes) ([]time.Duration, time.Duration, error) {
	p, err := s.Idle(ctx, tuned)
	if err != nil {
		return nil, 0, err
	}
	defer p.Close(context.WithoutCancel(ctx))
	settle, period := p.Pacing()
	// Let the workers settle (leader election, first poll) before sampling.
	time.Sleep(200*time.Millisecond + settle + jitter(period))
	start := time.Now()
	var lat []time.Duration
	for len(lat) < sz.idleSamples {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		if len(lat) > 0 && time.Since(start) >= sz.idleBudget {
			break
		}
		d, err := p.Once(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("sample %d: %w", len(lat)+1, err)
		}
		lat = append(lat, d)
		time.Sleep(settle + jitter(period))
	}
	return lat, time.Since(start), nil
}

func describe(r result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "n=%d in %.2fs", r.n, r.seconds)
	if r.perSecond > 0 {
		fmt.Fprintf(&b, ", %s/s", thousands(r.perSecond))
	}
	if len(r.lat) > 0 {
		fmt.Fprintf(&b, ", p50 %s ms, p99 %s ms", fmtMS(ms(percentile(r.lat, 50))), fmtMS(ms(percentile(r.lat, 99))))
	}
	fmt.Fprintf(&b, ", rss %.0f MB", r.rssMB)
	return b.String()
}

// summary is what a row's rounds add up to.
type summary struct {
	n                      int
	seconds                float64
	perSec, perMin, perMax float64
	p50, p99               float64
	hasLat                 bool
	rss                    float64
}

func summarize(r *row) summary {
	var s summary
	var secs, per, ns []float64
	var lat []time.Duration
	for _, x := range r.rounds {
		secs = append(secs, x.seconds)
		ns = append(ns, float64(x.n))
		if x.perSecond > 0 {
			per = append(per, x.perSecond)
		}
		lat = append(lat, x.lat...)
		s.rss = max(s.rss, x.rssMB)
	}
	s.seconds = median(secs)
	s.n = int(median(ns) + 0.5)
	if strings.HasPrefix(r.workload, "idle") {
		s.n = len(lat) // samples pooled over the rounds
	}
	if len(per) > 0 {
		s.perSec, s.perMin, s.perMax = median(per), slices.Min(per), slices.Max(per)
	}
	if len(lat) > 0 {
		s.hasLat = true
		s.p50, s.p99 = ms(percentile(lat, 50)), ms(percentile(lat, 99))
	}
	return s
}

func printTable(w io.Writer, rows []*row) {
	if !slices.ContainsFunc(rows, func(r *row) bool { return r.workload != "nodes" || len(r.rounds) == 0 }) {
		return // only the nodes workload, which has its own table
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tstore\tworkload\tn\tper second median (min–max)\tp50 ms\tp99 ms\trss MB\t")
	for _, r := range rows {
		if len(r.rounds) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\tfailed\t-\t-\t-\t\n", r.system, r.store, r.workload)
			continue
		}
		if r.workload == "nodes" {
			continue // its own table (printNodes)
		}
		s := summarize(r)
		per, p50, p99 := "-", "-", "-"
		if s.perSec > 0 {
			per = fmt.Sprintf("%s (%s–%s)", thousands(s.perSec), thousands(s.perMin), thousands(s.perMax))
		}
		if s.hasLat {
			p50, p99 = fmtMS(s.p50), fmtMS(s.p99)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t\n", r.system, r.store, r.workload, thousands(float64(s.n)), per, p50, p99, s.rss)
	}
	tw.Flush()
}

// idleVariants is the settings variants a workload runs with: tuned only,
// except idle in full mode, which runs each system's defaults too.
func idleVariants(s System, workload string, sz sizes) []bool {
	if _, ok := s.(untunedIdle); ok && workload == "idle" {
		return []bool{false} // its defaults have no poll to tune
	}
	if workload == "idle" && sz.idleDefaults {
		return []bool{false, true}
	}
	return []bool{true}
}

// untunedIdle is implemented by systems whose idle pickup has no poll
// interval or cooldown to tune (errand: the dispatcher wakes on the add):
// idle runs once, with their defaults.
type untunedIdle interface{ idleUntuned() }

func printSettings(w io.Writer, systems []System, workloads []string, sz sizes) {
	fmt.Fprintln(w, "\nsettings:")
	for _, s := range systems {
		seen := map[string]bool{}
		for _, wl := range workloads {
			if !supports(s, wl) {
				continue
			}
			for _, tuned := range idleVariants(s, wl, sz) {
				st := settingsOf(s, wl, tuned, sz)
				if seen[st] {
					continue
				}
				seen[st] = true
				label := wl
				if wl == "idle" {
					label = map[bool]string{false: "idle-default", true: "idle-tuned"}[tuned]
				}
				fmt.Fprintf(w, "  %-13s %-13s %s\n", s.Name(), label+":", st)
			}
		}
	}
}

func writeJSON(path string, rows []*row) error {
	out := []jsonRow{}
	f := func(v float64) *float64 { return &v }
	for _, r := range rows {
		if len(r.rounds) == 0 {
			continue
		}
		s := summarize(r)
		j := jsonRow{System: r.system, Store: r.store, Workload: r.workload, N: s.n, Rounds: len(r.rounds), Backlog: r.backlog, Settings: r.settings}
		if s.seconds > 0 {
			j.Seconds = f(round3(s.seconds))
		}
		if s.perSec > 0 {
			j.PerSecond, j.PerSecondMin, j.PerSecondMax = f(round3(s.perSec)), f(round3(s.perMin)), f(round3(s.perMax))
		}
		if s.hasLat {
			j.P50ms, j.P99ms = f(round3(s.p50)), f(round3(s.p99))
		}
		if s.rss > 0 {
			j.RSSMB = f(round3(s.rss))
		}
		if r.workload == "nodes" {
			j.Nodes = jsonNodes(r)
		}
		out = append(out, j)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func round3(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 3, 64), 64)
	return r
}

func systemNames() []string {
	var n []string
	for _, f := range systemFactories {
		n = append(n, f.name)
	}
	return n
}

func names(ss []System) string {
	var n []string
	for _, s := range ss {
		n = append(n, s.Name())
	}
	return strings.Join(n, ",")
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func fatalf(format string, args ...any) {
	logf("bench: "+format, args...)
	runAtExit()
	os.Exit(2)
}

var exitFuncs []func()

// atExit registers f to run when the harness ends (the errand binary's
// temp dir): main's end, fatalf, and the deferred call in main.
func atExit(f func()) { exitFuncs = append(exitFuncs, f) }

func runAtExit() {
	fs := exitFuncs
	exitFuncs = nil
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
