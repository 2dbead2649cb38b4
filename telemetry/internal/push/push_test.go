package push_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clrdiag/clrdiag/telemetry"
	"github.com/clrdiag/clrdiag/telemetry/internal/push"
)

func TestQueueIsBounded(t *testing.T) {
	q := push.NewQueue(telemetry.Delivery{QueueSize: 3, BatchSize: 10}.WithDefaults(), func(context.Context, []int) error { return nil })
	if d := q.Add(1, 2); d != 0 {
		t.Fatalf("dropped %d", d)
	}
	if d := q.Add(3, 4, 5); d != 2 {
		t.Fatalf("dropped %d, want 2", d)
	}
	if s := q.Stats(); s.Queued != 3 || s.Dropped != 2 {
		t.Errorf("stats %+v", s)
	}
}

// TestQueueBatches: a full batch is sent without waiting for the flush
// interval; Flush sends the rest; batches keep the order.
func TestQueueBatches(t *testing.T) {
	var mu sync.Mutex
	var batches [][]int
	got := make(chan struct{}, 10)
	q := push.NewQueue(telemetry.Delivery{BatchSize: 2, FlushInterval: time.Hour}.WithDefaults(), func(_ context.Context, b []int) error {
		mu.Lock()
		batches = append(batches, b)
		mu.Unlock()
		got <- struct{}{}
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { q.Run(ctx); close(done) }()
	q.Add(1, 2)
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("a full batch was not sent")
	}
	q.Add(3)
	if err := q.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	q.Add(4)
	cancel()
	<-done // Run sends what is left when its context ends
	mu.Lock()
	defer mu.Unlock()
	want := [][]int{{1, 2}, {3}, {4}}
	if len(batches) != len(want) {
		t.Fatalf("batches %v, want %v", batches, want)
	}
	for i := range want {
		for j := range want[i] {
			if batches[i][j] != want[i][j] {
				t.Fatalf("batches %v, want %v", batches, want)
			}
		}
	}
	if s := q.Stats(); s.Sent != 4 || s.Queued != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestQueueCountsFailures(t *testing.T) {
	boom := errors.New("boom")
	q := push.NewQueue(telemetry.Delivery{}.WithDefaults(), func(context.Context, []string) error { return boom })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go q.Run(ctx)
	q.Add("a", "b")
	if err := q.Flush(ctx); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if s := q.Stats(); s.Failed != 2 || !errors.Is(s.LastError, boom) {
		t.Errorf("stats %+v", s)
	}
}

// TestPostRetryAfter: a 503 with Retry-After: 1 is waited out (at least the
// second it asks), then the retry is accepted.
func TestPostRetryAfter(t *testing.T) {
	var n atomic.Int32
	var first, second time.Time
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			first = time.Now()
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		second = time.Now()
		w.Write([]byte("ok"))
	}))
	defer hs.Close()
	cfg := telemetry.Delivery{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Second}.WithDefaults()
	body, err := push.Post(context.Background(), cfg, push.Request{URL: hs.URL})
	if err != nil || string(body) != "ok" {
		t.Fatalf("body %q err %v", body, err)
	}
	if n.Load() != 2 || second.Sub(first) < time.Second {
		t.Errorf("%d requests, %v apart; want 2, at least 1 s apart", n.Load(), second.Sub(first))
	}
}

// TestPostPermanent: an answer outside the retryable list is not retried
// and the error carries its status and body.
func TestPostPermanent(t *testing.T) {
	var n atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, "bad\nrequest", http.StatusBadRequest)
	}))
	defer hs.Close()
	_, err := push.Post(context.Background(), telemetry.Delivery{}.WithDefaults(), push.Request{URL: hs.URL})
	var he *push.HTTPError
	if !errors.As(err, &he) || he.StatusCode != 400 || he.Body != "bad request " || n.Load() != 1 {
		t.Fatalf("err = %v (%d requests)", err, n.Load())
	}
}

// TestPostGivesUp: the attempts are bounded and counted in the error.
func TestPostGivesUp(t *testing.T) {
	var n atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer hs.Close()
	cfg := telemetry.Delivery{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}.WithDefaults()
	_, err := push.Post(context.Background(), cfg, push.Request{URL: hs.URL})
	var he *push.HTTPError
	if !errors.As(err, &he) || he.Attempts != 3 || n.Load() != 3 {
		t.Fatalf("err = %v (%d requests)", err, n.Load())
	}
}
