// Package metrics is errand's Prometheus instrumentation: what the engine
// counts, on a registry of its own that /metrics serves. The metrics carry no
// organization, instance or queue names, so /metrics reveals nothing of a
// tenant: the backlog is summed over the store's queues by mode.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the engine's collectors.
type Metrics struct {
	reg *prometheus.Registry
	// TasksAdded counts tasks stored by adds: the API's, hooks', trigger
	// rules' and the operations' own jobs; not dead-letter copies, which a
	// finish makes.
	TasksAdded prometheus.Counter
	// Attempts counts finished attempts by outcome (succeeded, failed,
	// timed_out, deferred, released, lease_expired) and kind (push, pull).
	Attempts *prometheus.CounterVec
	// DeliverySeconds is how long push deliveries took, by outcome.
	DeliverySeconds *prometheus.HistogramVec
	// Leased counts tasks handed to pull workers.
	Leased prometheus.Counter
	// LeasesWaiting is the long-polling leases waiting on this node for a
	// task (found none, waitSeconds not run out).
	LeasesWaiting prometheus.Gauge
	// InFlight is this node's push deliveries in flight.
	InFlight prometheus.Gauge
	// PastDeadline is this node's push deliveries in flight past their
	// attempt's deadline (found by the heartbeat, within 10 s of it).
	PastDeadline prometheus.Gauge
	// ChannelSubscribers is the channel subscribers connected to this node.
	ChannelSubscribers prometheus.Gauge
	// ChannelAppended counts messages appended to channel logs by this
	// node's deliveries (a retried append of the same task is not counted).
	ChannelAppended prometheus.Counter
	// ChannelSent counts channel messages handed to this node's
	// subscribers.
	ChannelSent prometheus.Counter
	// ChannelDropped counts subscribers disconnected for lag.
	ChannelDropped prometheus.Counter
	// TasksFailed counts tasks that failed for good (their attempts or
	// maxAgeSeconds spent), by kind (push or pull).
	TasksFailed *prometheus.CounterVec
	// NodesDeclaredDead counts the nodes this node declared dead.
	NodesDeclaredDead prometheus.Counter
	// HTTPRequests counts the requests this node answered, by api (v1,
	// hooks, ops, mcp, console, probes, other) and status code.
	HTTPRequests *prometheus.CounterVec

	backlog *backlogCollector
	build   *prometheus.GaugeVec
}

// New makes the collectors on a fresh registry, with the Go runtime's and
// the process's.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		TasksAdded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "errand_tasks_added_total", Help: "Tasks stored by adds.",
		}),
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "errand_attempts_total", Help: "Finished attempts, by outcome and kind (push or pull).",
		}, []string{"outcome", "kind"}),
		DeliverySeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "errand_delivery_seconds", Help: "Duration of push deliveries, by outcome.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 840},
		}, []string{"outcome"}),
		Leased: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "errand_tasks_leased_total", Help: "Tasks handed to pull workers.",
		}),
		LeasesWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "errand_leases_waiting", Help: "Long-polling leases waiting on this node for a task to come due.",
		}),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "errand_deliveries_in_flight", Help: "Push deliveries in flight on this node.",
		}),
		PastDeadline: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "errand_deliveries_past_deadline", Help: "Push deliveries in flight on this node past their deadline: failed as timed_out, their requests still open until the target answers or 10 minutes pass.",
		}),
		ChannelSubscribers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "errand_channel_subscribers", Help: "Channel subscribers connected to this node.",
		}),
		ChannelAppended: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "errand_channel_messages_appended_total", Help: "Messages appended to channel logs by this node's deliveries.",
		}),
		ChannelSent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "errand_channel_messages_sent_total", Help: "Channel messages sent to this node's subscribers.",
		}),
		ChannelDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "errand_channel_subscribers_dropped_total", Help: "Channel subscribers disconnected because they fell too far behind.",
		}),
		TasksFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "errand_tasks_failed_total", Help: "Tasks that failed for good (attempts or maxAgeSeconds spent), by kind (push or pull).",
		}, []string{"kind"}),
		NodesDeclaredDead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "errand_nodes_declared_dead_total", Help: "Nodes this node declared dead (silent past the threshold); their attempts were retried.",
		}),
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "errand_http_requests_total", Help: "Requests this node answered, by api (v1, hooks, ops, mcp, console, probes, other) and status code.",
		}, []string{"api", "code"}),
		backlog: newBacklogCollector(),
		build: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "errand_build_info", Help: "1, labelled with the version, commit and Go version of the running binary.",
		}, []string{"version", "commit", "goversion"}),
	}
	reg.MustRegister(m.HTTPRequests, m.backlog, m.build, m.TasksAdded, m.Attempts, m.DeliverySeconds, m.Leased, m.LeasesWaiting, m.InFlight, m.PastDeadline,
		m.ChannelSubscribers, m.ChannelAppended, m.ChannelSent, m.ChannelDropped, m.TasksFailed, m.NodesDeclaredDead,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// SetBuild sets errand_build_info's labels (the binary's version, commit
// and Go version), replacing any set before.
func (m *Metrics) SetBuild(version, commit, goVersion string) {
	m.build.Reset()
	m.build.WithLabelValues(version, commit, goVersion).Set(1)
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
