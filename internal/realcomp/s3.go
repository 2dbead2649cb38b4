package realcomp

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// S3Server is a running S3-compatible object store (versitygw with its
// posix backend: each bucket a directory, each object a file) that
// requires SigV4-signed requests from one root access key.
type S3Server struct {
	*Process
	// Endpoint is the base URL, e.g. http://127.0.0.1:PORT; address
	// buckets path-style.
	Endpoint  string
	AccessKey string
	SecretKey string
	Region    string
	// Dir is the backend directory: Dir/BUCKET/KEY holds each object.
	Dir string
}

// StartS3 starts versitygw (built by scripts/build-components.sh, or
// $CLRDIAG_S3SERVER) on a free loopback port with a fresh random access
// key and secret, and waits until it answers.
func StartS3(t testing.TB) *S3Server {
	t.Helper()
	bin, err := findBinary("CLRDIAG_S3SERVER", "versitygw", false)
	if err != nil {
		Missing(t, "the S3 server (versitygw)", err.Error()+"; build it with scripts/build-components.sh (go install github.com/versity/versitygw/cmd/versitygw)")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	port := FreePort(t)
	s := &S3Server{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), AccessKey: "clrdiag" + randomHex(6), SecretKey: randomHex(20),
		Region: "us-east-1", Dir: data}
	// The keys go through the environment, not argv (ps shows argv).
	env := []string{"ROOT_ACCESS_KEY_ID=" + s.AccessKey, "ROOT_SECRET_ACCESS_KEY=" + s.SecretKey, "VGW_REGION=" + s.Region}
	s.Process = start(t, "versitygw", bin, []string{"--port", fmt.Sprintf("127.0.0.1:%d", port), "--quiet", "posix", data}, env, dir)
	// An unsigned GET is answered (403 AccessDenied) once it listens.
	s.waitHTTP(t, http.MethodGet, s.Endpoint+"/", anyAnswer)
	return s
}

// IsolateAWS keeps the AWS SDK's default credential and region chain away
// from this machine's own configuration, and from the EC2 and container
// metadata addresses, for the rest of the test (t.Setenv), so that a test
// of an S3 client uses only what it configures.
func IsolateAWS(t testing.TB) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_CONFIG_FILE": filepath.Join(dir, "none-config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none-credentials"),
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "",
		"AWS_DEFAULT_REGION": "", "AWS_EC2_METADATA_DISABLED": "true", "AWS_ROLE_ARN": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
	} {
		t.Setenv(k, v)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
