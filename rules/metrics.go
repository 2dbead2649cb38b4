package rules

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the engine's Prometheus series.
type metrics struct {
	triggers       *prometheus.CounterVec
	throttled      *prometheus.CounterVec
	actions        *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	egressFailures *prometheus.CounterVec
	states         *prometheus.Desc
}

func newMetrics() *metrics {
	return &metrics{
		triggers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "clrdiag_rule_triggers_total",
			Help: "Times a collection rule's trigger fired (acted on or throttled)."}, []string{"rule", "trigger"}),
		throttled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "clrdiag_rule_throttled_total",
			Help: "Triggers not acted on because the rule reached its ActionCount limit."}, []string{"rule"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "clrdiag_rule_actions_total",
			Help: "Collection rule actions run, by result (succeeded, failed, cancelled)."}, []string{"rule", "type", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "clrdiag_rule_action_duration_seconds",
			Help: "How long collection rule actions took.", Buckets: []float64{0.1, 0.5, 1, 5, 15, 30, 60, 300, 1800}}, []string{"type"}),
		egressFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "clrdiag_rule_egress_failures_total",
			Help: "Artifacts whose egress failed (the artifact is kept locally)."}, []string{"rule", "provider"}),
		states: prometheus.NewDesc("clrdiag_rule_processes", "Processes a collection rule applies to, by the rule's state for them.",
			[]string{"rule", "state"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (e *Engine) Describe(ch chan<- *prometheus.Desc) {
	m := e.metrics
	m.triggers.Describe(ch)
	m.throttled.Describe(ch)
	m.actions.Describe(ch)
	m.duration.Describe(ch)
	m.egressFailures.Describe(ch)
	ch <- m.states
}

// Collect implements prometheus.Collector: the counters of triggers and
// actions, and the number of processes in each state per rule.
func (e *Engine) Collect(ch chan<- prometheus.Metric) {
	m := e.metrics
	m.triggers.Collect(ch)
	m.throttled.Collect(ch)
	m.actions.Collect(ch)
	m.duration.Collect(ch)
	m.egressFailures.Collect(ch)
	counts := map[[2]string]int{}
	for _, r := range e.cfg.Rules {
		for _, s := range []State{StateRunning, StateActionExecuting, StateThrottled, StateFinished} {
			counts[[2]string{r.Name, string(s)}] = 0
		}
	}
	for _, st := range e.Status() {
		counts[[2]string{st.Rule, string(st.State)}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(m.states, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}

var _ prometheus.Collector = (*Engine)(nil)
