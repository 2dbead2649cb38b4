package realcomp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// Prometheus is a running Prometheus server with its remote-write receiver
// on loopback.
type Prometheus struct {
	*Process
	// URL is the server's base URL; remote write goes to URL/api/v1/write.
	URL string
}

// StartPrometheus starts Debian's prometheus (or $CLRDIAG_PROMETHEUS) with
// --web.enable-remote-write-receiver, an empty scrape configuration and a
// temporary TSDB, and waits until /-/ready answers 200.
func StartPrometheus(t testing.TB) *Prometheus {
	t.Helper()
	bin, err := findBinary("CLRDIAG_PROMETHEUS", "prometheus", true)
	if err != nil {
		Missing(t, "prometheus", err.Error()+"; install Debian's prometheus (apt-get install prometheus), as scripts/test.sh does")
	}
	port := FreePort(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "prometheus.yml", "global:\n  scrape_interval: 1m\nscrape_configs: []\n")
	p := &Prometheus{URL: fmt.Sprintf("http://127.0.0.1:%d", port)}
	p.Process = start(t, "prometheus", bin, []string{
		"--config.file=" + cfg,
		"--storage.tsdb.path=" + dir + "/data",
		"--web.listen-address=127.0.0.1:" + strconv.Itoa(port),
		"--web.enable-remote-write-receiver",
		"--log.level=warn",
	}, nil, dir)
	p.waitHTTP(t, http.MethodGet, p.URL+"/-/ready", func(r *http.Response) bool { return r.StatusCode == http.StatusOK })
	return p
}

// Sample is one series of an instant query's answer.
type Sample struct {
	Metric map[string]string
	Time   time.Time
	Value  float64
}

// Query runs an instant PromQL query at time at and returns its vector.
func (p *Prometheus) Query(ctx context.Context, query string, at time.Time) ([]Sample, error) {
	q := url.Values{"query": {query}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1e3, 'f', 3, 64)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/query?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	var ans struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ans); err != nil {
		return nil, fmt.Errorf("query %q: %s: %w", query, resp.Status, err)
	}
	if ans.Status != "success" {
		return nil, fmt.Errorf("query %q: %s: %s", query, resp.Status, ans.Error)
	}
	if ans.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: a %s, not a vector", query, ans.Data.ResultType)
	}
	out := make([]Sample, 0, len(ans.Data.Result))
	for _, r := range ans.Data.Result {
		ts, _ := r.Value[0].(float64)
		vs, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(vs, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %q: %w", query, vs, err)
		}
		out = append(out, Sample{Metric: r.Metric, Time: time.UnixMilli(int64(ts * 1e3)), Value: v})
	}
	return out, nil
}
