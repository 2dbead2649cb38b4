// Package push is what the telemetry exporters share: a bounded queue that
// batches items and hands each batch to a send function, and an HTTP POST
// with retries, exponential backoff with jitter, and Retry-After.
package push

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clrdiag/clrdiag/telemetry"
)

// Config is the delivery configuration, with its defaults set.
type Config = telemetry.Delivery

// Stats counts what a Queue did.
type Stats = telemetry.Stats

// Queue batches items of type T and sends them with send, one batch at a
// time, from Run's goroutine. Add never blocks.
type Queue[T any] struct {
	cfg  Config
	send func(context.Context, []T) error

	mu      sync.Mutex
	items   []T
	stats   Stats
	wake    chan struct{} // a batch is full or a flush is asked for
	flushes []chan error  // Flush calls waiting for the queue to empty
	sendMu  sync.Mutex    // one batch in flight
}

// NewQueue makes a queue; cfg should already have its defaults.
func NewQueue[T any](cfg Config, send func(context.Context, []T) error) *Queue[T] {
	return &Queue[T]{cfg: cfg, send: send, wake: make(chan struct{}, 1)}
}

// Add queues items and reports how many were dropped because the queue was
// full.
func (q *Queue[T]) Add(items ...T) (dropped int) {
	q.mu.Lock()
	room := q.cfg.QueueSize - len(q.items)
	if room < 0 {
		room = 0
	}
	if len(items) > room {
		dropped = len(items) - room
		items = items[:room]
		q.stats.Dropped += uint64(dropped)
	}
	q.items = append(q.items, items...)
	full := len(q.items) >= q.cfg.BatchSize
	q.mu.Unlock()
	if full {
		q.poke()
	}
	return dropped
}

func (q *Queue[T]) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Stats returns the counts so far.
func (q *Queue[T]) Stats() Stats {
	q.mu.Lock()
	defer q.mu.Unlock()
	s := q.stats
	s.Queued = len(q.items)
	return s
}

// Run sends batches until ctx ends: whenever BatchSize items are queued, a
// Flush is asked for, or FlushInterval passes. When ctx ends it makes one
// last attempt (bounded by Timeout) at what is queued, then returns.
func (q *Queue[T]) Run(ctx context.Context) {
	t := time.NewTicker(q.cfg.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fl := q.takeFlushes()
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), q.cfg.Timeout)
			q.drain(final)
			cancel()
			answer(fl, ctx.Err())
			return
		case <-t.C:
		case <-q.wake:
		}
		// The Flush calls made before this drain starts are answered when
		// it ends; a later one pokes wake again.
		fl := q.takeFlushes()
		answer(fl, q.drain(ctx))
	}
}

// Flush asks Run to send everything queued and waits until it has (or
// ctx ends). It returns the last batch's error, if any.
func (q *Queue[T]) Flush(ctx context.Context) error {
	ch := make(chan error, 1)
	q.mu.Lock()
	q.flushes = append(q.flushes, ch)
	q.mu.Unlock()
	q.poke()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (q *Queue[T]) takeFlushes() []chan error {
	q.mu.Lock()
	defer q.mu.Unlock()
	fl := q.flushes
	q.flushes = nil
	return fl
}

func answer(fl []chan error, err error) {
	for _, ch := range fl {
		ch <- err
	}
}

// drain sends batches until the queue is empty (or ctx ends); it returns
// the last failed batch's error.
func (q *Queue[T]) drain(ctx context.Context) error {
	q.sendMu.Lock()
	defer q.sendMu.Unlock()
	var last error
	for {
		q.mu.Lock()
		n := min(len(q.items), q.cfg.BatchSize)
		if n == 0 {
			q.mu.Unlock()
			return last
		}
		batch := make([]T, n)
		copy(batch, q.items)
		q.items = append(q.items[:0], q.items[n:]...)
		q.mu.Unlock()

		err := q.send(ctx, batch)
		q.mu.Lock()
		if err != nil {
			q.stats.Failed += uint64(n)
			q.stats.LastError = err
			last = err
		} else {
			q.stats.Sent += uint64(n)
		}
		q.mu.Unlock()
		if ctx.Err() != nil {
			return last
		}
	}
}

// HTTPError is a receiver's refusal.
type HTTPError struct {
	URL        string
	StatusCode int
	Status     string
	Body       string // the start of the answer's body
	Attempts   int
	// RetryAfter is the wait the receiver asked for, 0 when none.
	RetryAfter time.Duration
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("POST %s: %s", e.URL, e.Status)
	if e.Body != "" {
		s += ": " + e.Body
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

// Request is one POST to send.
type Request struct {
	URL    string
	Body   []byte
	Header http.Header
	// Retryable says which answers are worth another attempt; nil retries
	// 429, 502, 503 and 504 (OTLP/HTTP's list).
	Retryable func(status int) bool
}

// DefaultRetryable is OTLP/HTTP's list of retryable answers.
func DefaultRetryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// Post sends r, retrying network errors and retryable answers up to
// cfg.MaxAttempts times with backoff. It returns the accepted answer's
// body (at most 1 MiB).
func Post(ctx context.Context, cfg Config, r Request) ([]byte, error) {
	retryable := r.Retryable
	if retryable == nil {
		retryable = DefaultRetryable
	}
	backoff := cfg.InitialBackoff
	var last error
	for attempt := 1; ; attempt++ {
		body, wait, err := postOnce(ctx, cfg, r, retryable)
		if err == nil {
			return body, nil
		}
		last = err
		var he *HTTPError
		if errors.As(err, &he) {
			he.Attempts = attempt
		}
		if wait < 0 || attempt >= cfg.MaxAttempts || ctx.Err() != nil {
			if he == nil && attempt > 1 {
				return nil, fmt.Errorf("%w (after %d attempts)", last, attempt)
			}
			return nil, last
		}
		if wait == 0 {
			// Full jitter in [backoff/2, backoff].
			wait = backoff/2 + rand.N(backoff/2+1)
			backoff = min(backoff*2, cfg.MaxBackoff)
		}
		wait = min(wait, cfg.MaxBackoff)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (gave up waiting to retry: %v)", last, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// postOnce sends r once. wait < 0 means the error is permanent; wait > 0
// is the receiver's Retry-After.
func postOnce(ctx context.Context, cfg Config, r Request, retryable func(int) bool) ([]byte, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return nil, -1, err
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, 0, err // network errors are retried
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return body, 0, nil
	}
	he := &HTTPError{URL: r.URL, StatusCode: resp.StatusCode, Status: resp.Status, Body: snippet(body)}
	if !retryable(resp.StatusCode) {
		return nil, -1, he
	}
	he.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
	return nil, he.RetryAfter, he
}

func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// snippet is the printable start of an error answer.
func snippet(b []byte) string {
	const max = 512
	if len(b) > max {
		b = b[:max]
	}
	out := make([]rune, 0, len(b))
	for _, r := range string(b) {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		} else if r < 0x20 || r == 0x7f || r == 0xfffd {
			continue
		}
		out = append(out, r)
	}
	return string(out)
}

// SetHeaders copies configured headers into h, refusing names and values
// that would break the request (empty names, colons, line breaks).
func SetHeaders(h http.Header, headers map[string]string) error {
	for k, v := range headers {
		if k == "" || strings.ContainsAny(k, "\r\n:") || strings.ContainsAny(v, "\r\n") {
			return fmt.Errorf("bad header %q", k)
		}
		h.Set(k, v)
	}
	return nil
}

// SetAuth sets h's Authorization from basic credentials or a bearer token
// (not both).
func SetAuth(h http.Header, username, password, bearer string) error {
	switch {
	case bearer != "" && username != "":
		return errors.New("give basic authentication or a bearer token, not both")
	case bearer != "":
		h.Set("Authorization", "Bearer "+bearer)
	case username != "":
		r := &http.Request{Header: http.Header{}}
		r.SetBasicAuth(username, password)
		h.Set("Authorization", r.Header.Get("Authorization"))
	}
	return nil
}
