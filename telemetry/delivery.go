package telemetry

import (
	"net/http"
	"time"
)

// Defaults of Delivery.
const (
	DefaultQueueSize      = 8192
	DefaultBatchSize      = 512
	DefaultFlushInterval  = 10 * time.Second
	DefaultTimeout        = 10 * time.Second
	DefaultMaxAttempts    = 5
	DefaultInitialBackoff = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
)

// Delivery is how an exporter queues, batches and retries. The zero value
// of each field is its default.
type Delivery struct {
	// QueueSize bounds the records waiting to be sent; a record added to a
	// full queue is dropped (and counted in Stats). 0 is 8192.
	QueueSize int
	// BatchSize is the most records one request carries; 0 is 512.
	BatchSize int
	// FlushInterval is the longest a record waits for its batch to fill;
	// 0 is 10 s.
	FlushInterval time.Duration
	// Timeout bounds each request; 0 is 10 s.
	Timeout time.Duration
	// MaxAttempts is how many times a batch is sent before it is dropped;
	// 0 is 5.
	MaxAttempts int
	// InitialBackoff and MaxBackoff bound the wait between two attempts,
	// doubled after each failure, with jitter; a Retry-After answer sets
	// the wait (up to MaxBackoff). 0 is 500 ms and 30 s.
	InitialBackoff, MaxBackoff time.Duration
	// HTTPClient sends the requests; nil is a client with Timeout.
	HTTPClient *http.Client
}

// WithDefaults returns d with its zero fields set to the defaults.
func (d Delivery) WithDefaults() Delivery {
	if d.QueueSize <= 0 {
		d.QueueSize = DefaultQueueSize
	}
	if d.BatchSize <= 0 {
		d.BatchSize = DefaultBatchSize
	}
	if d.FlushInterval <= 0 {
		d.FlushInterval = DefaultFlushInterval
	}
	if d.Timeout <= 0 {
		d.Timeout = DefaultTimeout
	}
	if d.MaxAttempts <= 0 {
		d.MaxAttempts = DefaultMaxAttempts
	}
	if d.InitialBackoff <= 0 {
		d.InitialBackoff = DefaultInitialBackoff
	}
	if d.MaxBackoff <= 0 {
		d.MaxBackoff = DefaultMaxBackoff
	}
	if d.MaxBackoff < d.InitialBackoff {
		d.MaxBackoff = d.InitialBackoff
	}
	if d.HTTPClient == nil {
		d.HTTPClient = &http.Client{Timeout: d.Timeout}
	}
	return d
}

// Stats counts what an exporter did with one signal.
type Stats struct {
	Queued  int    // records waiting now
	Sent    uint64 // records in batches the receiver accepted
	Dropped uint64 // records refused by a full queue
	Failed  uint64 // records in batches given up after their last attempt or a permanent error
	// LastError is the last failed batch's error, nil when none failed.
	LastError error
}
