package egress_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/clrdiag/clrdiag/egress"
	"github.com/clrdiag/clrdiag/internal/realcomp"
)

// s3Config is a configuration for srv with its keys given explicitly.
func s3Config(srv *realcomp.S3Server, bucket string) egress.S3Config {
	return egress.S3Config{Name: "store", Bucket: bucket, Prefix: "clrdiag/prod/", Region: srv.Region, Endpoint: srv.Endpoint,
		UsePathStyle: true, AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, DisableInstanceMetadata: true}
}

func newS3(t *testing.T, cfg egress.S3Config) *egress.S3 {
	t.Helper()
	p, err := egress.NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func makeBucket(t *testing.T, srv *realcomp.S3Server, bucket string) {
	t.Helper()
	realcomp.IsolateAWS(t)
	p := newS3(t, s3Config(srv, bucket))
	if _, err := p.Client().CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
}

// getObject reads an object back with a client of its own.
func getObject(t *testing.T, p *egress.S3, bucket, key string) ([]byte, *s3.GetObjectOutput) {
	t.Helper()
	out, err := p.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, out
}

// TestS3PutNettrace uploads a real capture with SigV4 to a real S3 server,
// reads the object back and decodes it.
func TestS3PutNettrace(t *testing.T) {
	srv := realcomp.StartS3(t)
	makeBucket(t, srv, "traces")
	p := newS3(t, s3Config(srv, "traces"))
	a, want := nettraceArtifact(t)
	a.Metadata = map[string]string{"pid": "4242", "rule": "HighCpu"}
	res, err := p.Put(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	key := "clrdiag/prod/" + a.Name
	if res.Location != "s3://traces/"+key || res.Size != int64(len(want)) || res.ETag == "" || res.Provider != "store" {
		t.Errorf("result %+v", res)
	}
	got, out := getObject(t, p, "traces", key)
	if !bytes.Equal(got, want) {
		t.Fatalf("the object differs from the artifact (%d vs %d bytes)", len(got), len(want))
	}
	n := decodeAll(t, got)
	t.Logf("the object decodes: %d events", n)
	if aws.ToString(out.ContentType) != "application/octet-stream" || out.Metadata["pid"] != "4242" || out.Metadata["rule"] != "HighCpu" {
		t.Errorf("content type %q, metadata %v", aws.ToString(out.ContentType), out.Metadata)
	}
	// The posix backend keeps the object as a file: a second look at it.
	onDisk, err := os.ReadFile(filepath.Join(srv.Dir, "traces", "clrdiag", "prod", a.Name))
	if err != nil || !bytes.Equal(onDisk, want) {
		t.Errorf("the backend's file: %d bytes, err %v", len(onDisk), err)
	}
}

// bigFile writes size random bytes to a file and returns its path and
// SHA-256.
func bigFile(t *testing.T, size int64) (string, [32]byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dump_4242.dmp")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(f, h), rand.Reader, size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return path, sum
}

// TestS3MultipartDump uploads a 13 MiB + 7 byte file in 5 MiB parts (a
// multipart upload of three parts) and checks the object's size, content
// and that no upload is left open.
func TestS3MultipartDump(t *testing.T) {
	srv := realcomp.StartS3(t)
	makeBucket(t, srv, "dumps")
	cfg := s3Config(srv, "dumps")
	cfg.PartSize = 5 << 20
	p := newS3(t, cfg)
	const size = 13<<20 + 7
	path, sum := bigFile(t, size)
	a, f, err := egress.File(path, "", "application/vnd.microsoft.dump")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := p.Put(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	// A multipart object's ETag is the MD5 of its parts' MD5s, "-N" parts.
	if !strings.HasSuffix(res.ETag, "-3") || res.Size != size {
		t.Errorf("result %+v: want a 3-part upload of %d bytes", res, size)
	}
	got, out := getObject(t, p, "dumps", "clrdiag/prod/dump_4242.dmp")
	if int64(len(got)) != size || aws.ToInt64(out.ContentLength) != size || sha256.Sum256(got) != sum {
		t.Fatalf("the object is %d bytes (Content-Length %d), want %d with the file's SHA-256", len(got), aws.ToInt64(out.ContentLength), size)
	}
	ups, err := p.Client().ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String("dumps")})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		t.Errorf("%d multipart uploads left open", len(ups.Uploads))
	}
}

// TestS3WrongSecret: the server checks the signature; the refusal is not
// retried and the error says where the artifact is kept.
func TestS3WrongSecret(t *testing.T) {
	srv := realcomp.StartS3(t)
	makeBucket(t, srv, "traces")
	cfg := s3Config(srv, "traces")
	cfg.SecretAccessKey = "not-" + srv.SecretKey
	p := newS3(t, cfg)
	a, _ := nettraceArtifact(t)
	_, err := p.Put(context.Background(), a)
	var ee *egress.Error
	if !errors.As(err, &ee) || !strings.Contains(err.Error(), "SignatureDoesNotMatch") ||
		!strings.Contains(err.Error(), "the artifact is kept at "+a.LocalPath) || ee.Destination != "s3://traces/clrdiag/prod/"+a.Name {
		t.Fatalf("err = %v", err)
	}
}

// faultProxy forwards to the real server after answering 503 SlowDown to
// the first fail requests (a fault the real server does not show on
// demand); it counts every request.
func faultProxy(t *testing.T, srv *realcomp.S3Server, fail int64) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	u, _ := url.Parse(srv.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(u)
	var n atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= fail {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs, &n
}

// TestS3RetriesWithBackoff: two 503 answers are retried and the upload
// lands; a server that keeps answering 503 fails after MaxAttempts, and
// the error counts the attempts and keeps the artifact.
func TestS3RetriesWithBackoff(t *testing.T) {
	srv := realcomp.StartS3(t)
	makeBucket(t, srv, "traces")
	a, want := nettraceArtifact(t)

	proxy, n := faultProxy(t, srv, 2)
	cfg := s3Config(srv, "traces")
	cfg.Endpoint, cfg.MaxAttempts, cfg.MaxBackoff = proxy.URL, 4, 50*time.Millisecond
	p := newS3(t, cfg)
	if _, err := p.Put(context.Background(), a); err != nil {
		t.Fatalf("after two 503s: %v", err)
	}
	if got := n.Load(); got != 3 {
		t.Errorf("%d requests reached the proxy, want 3 (two refused, one forwarded)", got)
	}
	if got, _ := getObject(t, p, "traces", "clrdiag/prod/"+a.Name); !bytes.Equal(got, want) {
		t.Error("the object differs from the artifact")
	}

	down, m := faultProxy(t, srv, 1<<30)
	cfg.Endpoint = down.URL
	p = newS3(t, cfg)
	_, err := p.Put(context.Background(), a)
	var ee *egress.Error
	if !errors.As(err, &ee) || ee.Attempts != 4 || m.Load() != 4 || !strings.Contains(err.Error(), "after 4 attempts") ||
		!strings.Contains(err.Error(), "SlowDown") || !strings.Contains(err.Error(), "the artifact is kept at "+a.LocalPath) {
		t.Fatalf("err = %v (attempts %d, requests %d)", err, ee.Attempts, m.Load())
	}
	if _, err := os.Stat(a.LocalPath); err != nil {
		t.Errorf("the local artifact is gone: %v", err)
	}
}

// TestS3CredentialsFromEnvAndFile: with no keys in the configuration the
// SDK's chain finds them in the environment, then in a shared credentials
// file's profile.
func TestS3CredentialsFromEnvAndFile(t *testing.T) {
	srv := realcomp.StartS3(t)
	makeBucket(t, srv, "traces")
	body := []byte("credentials check")
	put := func(t *testing.T, cfg egress.S3Config, name string) {
		t.Helper()
		p := newS3(t, cfg)
		if _, err := p.Put(context.Background(), egress.Artifact{Name: name, Body: bytes.NewReader(body), Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		if got, _ := getObject(t, p, "traces", "clrdiag/prod/"+name); !bytes.Equal(got, body) {
			t.Error("object differs")
		}
	}
	t.Run("env", func(t *testing.T) {
		realcomp.IsolateAWS(t)
		t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
		t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
		t.Setenv("AWS_REGION", srv.Region)
		cfg := s3Config(srv, "traces")
		cfg.AccessKeyID, cfg.SecretAccessKey, cfg.Region = "", "", ""
		put(t, cfg, "from-env")
	})
	t.Run("file", func(t *testing.T) {
		realcomp.IsolateAWS(t)
		creds := filepath.Join(t.TempDir(), "credentials")
		content := fmt.Sprintf("[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n[egress]\naws_access_key_id = %s\naws_secret_access_key = %s\n", srv.AccessKey, srv.SecretKey)
		if err := os.WriteFile(creds, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := s3Config(srv, "traces")
		cfg.AccessKeyID, cfg.SecretAccessKey = "", ""
		cfg.SharedCredentialsFile, cfg.Profile = creds, "egress"
		put(t, cfg, "from-file")
	})
}

func TestNewS3Checks(t *testing.T) {
	realcomp.IsolateAWS(t)
	for _, cfg := range []egress.S3Config{
		{},
		{Bucket: "b", AccessKeyID: "only-the-id"},
		{Bucket: "b", PartSize: 1 << 20},
	} {
		if _, err := egress.NewS3(context.Background(), cfg); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
}
